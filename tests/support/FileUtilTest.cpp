// Atomic writes that cannot be turned against the user: a fresh temporary
// file created exclusively (a planted link at a predictable name used to be
// followed), links followed to the file they name, devices and folders never
// replaced, permissions kept, missing folders created.
#include "support/FileUtil.h"

#include <gtest/gtest.h>

#include <filesystem>

#include <sys/stat.h>
#include <unistd.h>

namespace hone::support {
namespace {

namespace fs = std::filesystem;

struct AtomicWrite : ::testing::Test {
  fs::path dir = fs::temp_directory_path() / ("hone-fileutil-" + std::to_string(::getpid()));
  void SetUp() override { fs::create_directories(dir); }
  void TearDown() override { fs::remove_all(dir); }
  std::string read(const fs::path &p) { return *readFile(p.string()); }
};

TEST_F(AtomicWrite, ReplacesTheFileKeepsItsPermissionsAndLeavesNoTemporary) {
  fs::path f = dir / "a.map";
  std::string why;
  ASSERT_TRUE(writeFileAtomically(f.string(), "one\n", &why)) << why;
  ::chmod(f.c_str(), 0750);
  ASSERT_TRUE(writeFileAtomically(f.string(), "two\n", &why)) << why;
  EXPECT_EQ(read(f), "two\n");
  EXPECT_EQ(fs::status(f).permissions() & fs::perms::mask,
            fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec);
  size_t entries = 0;
  for ([[maybe_unused]] const auto &e : fs::directory_iterator(dir))
    ++entries;
  EXPECT_EQ(entries, 1u);
}

TEST_F(AtomicWrite, APlantedLinkAtTheOldTemporaryNameIsNotFollowed) {
  fs::path victim = dir / "victim.txt";
  ASSERT_TRUE(writeFileAtomically(victim.string(), "precious\n", nullptr));
  fs::create_symlink(victim, dir / "out.cc.hone-tmp"); // the name hone once used, every time
  std::string why;
  ASSERT_TRUE(writeFileAtomically((dir / "out.cc").string(), "generated\n", &why)) << why;
  EXPECT_EQ(read(victim), "precious\n");
  EXPECT_EQ(read(dir / "out.cc"), "generated\n");
}

TEST_F(AtomicWrite, ALinkIsFollowedToItsFileAndStaysALink) {
  fs::path real = dir / "real.map", link = dir / "link.map";
  ASSERT_TRUE(writeFileAtomically(real.string(), "old\n", nullptr));
  fs::create_symlink(real, link);
  std::string why;
  ASSERT_TRUE(writeFileAtomically(link.string(), "new\n", &why)) << why;
  EXPECT_TRUE(fs::is_symlink(fs::symlink_status(link)));
  EXPECT_EQ(read(real), "new\n");
  fs::create_symlink(dir / "missing.map", dir / "dangling.map");
  EXPECT_FALSE(writeFileAtomically((dir / "dangling.map").string(), "x", &why));
  EXPECT_NE(why.find("a link to a file that does not exist"), std::string::npos) << why;
}

TEST_F(AtomicWrite, DevicesAndFoldersAreNeverReplaced) {
  std::string why;
  EXPECT_FALSE(writeFileAtomically("/dev/null", "x", &why));
  EXPECT_NE(why.find("not a regular file"), std::string::npos) << why;
  EXPECT_TRUE(fs::exists("/dev/null"));
  EXPECT_FALSE(fs::is_regular_file("/dev/null"));
  EXPECT_FALSE(writeFileAtomically(dir.string(), "x", &why));
  EXPECT_TRUE(fs::is_directory(dir));
}

TEST_F(AtomicWrite, AMissingFolderIsCreatedOrTheReasonGiven) {
  std::string why;
  ASSERT_TRUE(writeFileAtomically((dir / "a" / "b" / "x.cc").string(), "int x;\n", &why)) << why;
  EXPECT_EQ(read(dir / "a" / "b" / "x.cc"), "int x;\n");
  ASSERT_TRUE(writeFileAtomically((dir / "file").string(), "", &why));
  EXPECT_FALSE(writeFileAtomically((dir / "file" / "x.cc").string(), "x", &why));
  EXPECT_NE(why.find("cannot create the folder"), std::string::npos) << why;
}


// A job's output can be larger than memory should hold: only its tail is read.
TEST_F(AtomicWrite, ATailIsReadWithoutTheRestAndSaysWhatWasLeftOut) {
  fs::path f = dir / "output";
  std::string text = std::string(5000, 'a') + "the end\n";
  ASSERT_TRUE(writeFileAtomically(f.string(), text, nullptr));
  bool cut = false;
  auto tail = readFileTail(f.string(), 8, &cut);
  ASSERT_TRUE(tail) << tail.error().message;
  EXPECT_EQ(*tail, "the end\n");
  EXPECT_TRUE(cut);
  tail = readFileTail(f.string(), 1 << 20, &cut);
  ASSERT_TRUE(tail);
  EXPECT_EQ(*tail, text);
  EXPECT_FALSE(cut);
  ASSERT_TRUE(writeFileAtomically((dir / "empty").string(), "", nullptr));
  tail = readFileTail((dir / "empty").string(), 8, &cut);
  ASSERT_TRUE(tail);
  EXPECT_EQ(*tail, "");
  EXPECT_FALSE(cut);
  EXPECT_FALSE(readFileTail((dir / "missing").string(), 8));
  EXPECT_FALSE(readFileTail(dir.string(), 8)); // a folder
}

} // namespace
} // namespace hone::support
