// Prompt templates: placeholder syntax, rendering, located errors, the
// shipped templates, and user overrides taking precedence.
#include "llm/Prompt.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace hone::llm {
namespace {

TEST(Prompt, RendersEveryPlaceholder) {
  auto t = parseTemplate("t.md", "Tune {{app}} on {{ machine }}.\n{{app}} again.");
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(t->placeholders, (std::vector<std::string>{"app", "machine"}));
  auto text = render(*t, {{"app", "circuit"}, {"machine", "p100x4"}});
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, "Tune circuit on p100x4.\ncircuit again.");
  // Values are inserted verbatim, even when they contain braces.
  EXPECT_EQ(*render(*t, {{"app", "{{x}}"}, {"machine", "m"}}), "Tune {{x}} on m.\n{{x}} again.");
}

TEST(Prompt, ErrorsAreLocatedInTheTemplate) {
  auto open = parseTemplate("t.md", "line one\nsee {{app");
  ASSERT_FALSE(open.ok());
  EXPECT_EQ(open.error().message, "t.md:2:5: '{{' without a closing '}}'");
  auto bad = parseTemplate("t.md", "{{1app}}");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("t.md:1:1: '{{1app}}' is not a placeholder name"), std::string::npos)
      << bad.error().message;
  auto t = parseTemplate("t.md", "a\nb {{feedback}}");
  auto missing = render(*t, {});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().message, "t.md:2:3: no value for the placeholder 'feedback'");
}

TEST(Prompt, ShippedMappingTemplatesParse) {
  for (const char *name : {"system", "trace", "opro", "repair"}) {
    auto t = loadTemplate("mapping", name);
    ASSERT_TRUE(t.ok()) << name << ": " << t.error().message;
    EXPECT_FALSE(t->text.empty());
  }
  auto trace = loadTemplate("mapping", "trace");
  for (const char *p : {"mapper", "feedback", "dsl", "app_description"})
    EXPECT_NE(std::find(trace->placeholders.begin(), trace->placeholders.end(), p), trace->placeholders.end()) << p;
  auto opro = loadTemplate("mapping", "opro");
  EXPECT_NE(std::find(opro->placeholders.begin(), opro->placeholders.end(), "history"), opro->placeholders.end());
  auto none = loadTemplate("mapping", "nope");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message.find("no prompt template mapping/nope.md"), std::string::npos);
}

TEST(Prompt, AUserFolderOverridesTheShippedTemplate) {
  auto dir = std::filesystem::temp_directory_path() / ("hone-prompts-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir / "mapping");
  std::ofstream(dir / "mapping" / "trace.md") << "Mine: {{mapper}}";
  auto t = loadTemplate("mapping", "trace", {dir.string()});
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(*render(*t, {{"mapper", "Task * GPU;"}}), "Mine: Task * GPU;");
  std::filesystem::remove_all(dir);
}

} // namespace
} // namespace hone::llm
