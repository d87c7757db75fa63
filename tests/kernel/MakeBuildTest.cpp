// hone kernel init on a program that its own Makefile builds and runs (as
// benchmark suites ship them): make's dry runs give the compiler, the flags,
// the libraries, the companion sources and the run target's arguments; lines
// that report times are not results.
#include "kernel/MakeBuild.h"
#include "kernel/Init.h"
#include "kernel/Manifest.h"
#include "kernel/Runner.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <unistd.h>

using namespace hone::kernel;
namespace fs = std::filesystem;

TEST(MakeBuild, WordsSplitAsTheShellSplitsThem) {
  EXPECT_EQ(shellWords("nvcc  -O3 'a b' \"c \\\"d\\\"\" e\\ f -DX='\"y\"'"),
            (std::vector<std::string>{"nvcc", "-O3", "a b", "c \"d\"", "e f", "-DX=\"y\""}));
  EXPECT_TRUE(shellWords("   ").empty());
  EXPECT_EQ(shellWords("''"), std::vector<std::string>{""});
  EXPECT_EQ(shellWords("'unterminated"), std::vector<std::string>{"unterminated"});
}

TEST(MakeBuild, CompileLinkAndRunLinesAreRead) {
  std::string build = "nvcc  -std=c++17 -Xcompiler -Wall -arch=sm_80 -O3 -MMD "
                      "-MF main.d -c main.cu -o main.o\n"
                      "nvcc  -std=c++17 -O3 -c kernels.cu -o kernels.o\n"
                      "nvcc  -std=c++17 -Xcompiler -Wall -arch=sm_80 -O3 "
                      "main.o kernels.o -o bench \\\n"
                      "  -lcublas -L/opt/lib\n";
  std::string run = "nvcc  -std=c++17 -O3 -c main.cu -o main.o\n"
                    "OMP_NUM_THREADS=4 ./bench 1000 'two words' 3 > log.txt\n./bench 2000\n";
  auto f = parseMakeDryRun(build, run, "main.cu");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->compiler, "nvcc");
  EXPECT_EQ(f->flags, (std::vector<std::string>{"-std=c++17", "-Xcompiler", "-Wall", "-arch=sm_80", "-O3"}));
  EXPECT_EQ(f->sources, std::vector<std::string>{"kernels.cu"});
  EXPECT_EQ(f->program, "bench");
  EXPECT_EQ(f->linkFlags, (std::vector<std::string>{"-lcublas", "-L/opt/lib"}));
  EXPECT_EQ(f->runArgs, (std::vector<std::string>{"1000", "two words", "3"}));

  // One line that compiles and links; make's own messages are not commands.
  auto one = parseMakeDryRun("make: Entering directory '/x'\ng++ -O2 -fopenmp "
                             "app.cpp util.cpp -o app -lm\n",
                             "", "app.cpp");
  ASSERT_TRUE(one);
  EXPECT_EQ(one->compiler, "g++");
  EXPECT_EQ(one->flags, (std::vector<std::string>{"-O2", "-fopenmp"}));
  EXPECT_EQ(one->sources, std::vector<std::string>{"util.cpp"});
  EXPECT_EQ(one->linkFlags, std::vector<std::string>{"-lm"});
  EXPECT_EQ(one->program, "app");
  EXPECT_TRUE(one->runArgs.empty());
  // No line compiles the program: nothing is claimed.
  EXPECT_FALSE(parseMakeDryRun("gcc -c other.c -o other.o\n", "", "main.c"));
  EXPECT_FALSE(parseMakeDryRun("", "", "main.c"));
}

namespace {

struct MadeFolder {
  fs::path dir;
  explicit MadeFolder(const std::string &name) {
    dir = fs::temp_directory_path() / ("hone-make-" + std::to_string(::getpid())) / name;
    fs::create_directories(dir);
  }
  ~MadeFolder() { fs::remove_all(dir.parent_path()); }
  void write(const std::string &file, const std::string &text) const { std::ofstream(dir / file) << text; }
};

bool toolOnPath(const char *tool) {
  return std::system((std::string("command -v ") + tool + " >/dev/null 2>&1").c_str()) == 0;
}

const char *kMadeProgram = R"(#include <stdio.h>
#include <stdlib.h>
#ifndef BLOCK
#define BLOCK 64
#endif
double work(int n);
int main(int argc, char **argv) {
  int n = atoi(argv[1]);
  double t = 0.5;
  printf("Average kernel execution time: %f (ms)\n", t);
  printf("%.17g\n", work(n));
  return 0;
}
)";

} // namespace

TEST(Init, TheProgramsOwnMakefileGivesTheBuildAndTheRun) {
  if (!toolOnPath("make"))
    GTEST_SKIP() << "make is not installed (apt-get install make)";
  MadeFolder f("saxpy-omp");
  f.write("main.c", kMadeProgram);
  f.write("work.c", "double work(int n) { double s = 0; for (int i = 0; i < n; "
                    "i++) s += i; return s; }\n");
  f.write("Makefile", "CC = gcc\nOPTIMIZE = yes\nCFLAGS := -std=c99 -Wall\nifeq "
                      "($(OPTIMIZE),yes)\n"
                      "  CFLAGS += -O3 -fopenmp -DBLOCK=128 '-DSTAMP=$$(id>PWNED)' '-DMSG=a b'\nendif\nprogram = saxpy\nobj = main.o work.o\n"
                      "$(program): $(obj)\n\t$(CC) $(CFLAGS) $(obj) -o $@ -lm\n"
                      "%.o: %.c\n\t$(CC) $(CFLAGS) -c $< -o $@\n"
                      "run: $(program)\n\t./$(program) 1000 2>&1 | tee out.txt\n");
  auto r = initProject((f.dir / "main.c").string(), kMadeProgram, InitOptions{2});
  ASSERT_TRUE(r) << r.error().message;
  const std::string &t = r->text;
  EXPECT_NE(t.find("name = \"saxpy-omp\""), std::string::npos) << t; // main.c: the folder names it
  // Words go into `flags` as they are (each is quoted when the build runs); one with a space cannot.
  EXPECT_NE(t.find("flags = \"-std=c99 -Wall -O3 -fopenmp -DSTAMP=$(id>PWNED)\""), std::string::npos) << t;
  EXPECT_NE(t.find("flag '-DMSG=a b' holds whitespace"), std::string::npos) << t;
  EXPECT_FALSE(fs::exists(f.dir / "PWNED"));
  EXPECT_NE(t.find("command = \"gcc {cflags} {defines} {includes} {sources} -o "
                   "{out} -lm\""),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("sources = [\"main.c\", \"work.c\"]"), std::string::npos) << t;
  EXPECT_NE(t.find("command = \"{exe} 1000\"\nseeds = [1]"), std::string::npos) << t;
  EXPECT_NE(t.find("ignore = [\"^\\\\s*Average kernel execution time:\"]"), std::string::npos) << t;
  EXPECT_NE(t.find("OMP_NUM_THREADS"), std::string::npos) << t; // -fopenmp from the Makefile
  // The Makefile's -DBLOCK=128 sets a knob: it is the knob's default, not a flag.
  EXPECT_NE(t.find("name = \"BLOCK\"\nkind = \"define\"\nvalues = [2, 4, 8, 16, 32, 64, 128, 256, 512]\ndefault = 128"),
            std::string::npos)
      << t;
  f.write("hone.toml", t);
  auto m = loadManifest(f.dir.string());
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_EQ(m->output.ignore.size(), 1u);

  // Without a Makefile the same program gets hone's own build.
  fs::remove(f.dir / "Makefile");
  auto plain = initProject((f.dir / "main.c").string(), kMadeProgram, InitOptions{2});
  ASSERT_TRUE(plain);
  EXPECT_NE(plain->text.find("flags = \"-O2\""), std::string::npos) << plain->text;
  EXPECT_NE(plain->text.find("command = \"{exe} {seed}\""), std::string::npos);
}

TEST(Init, AMakefilesArchitectureThatNvccDropsIsReplacedAndSaid) {
  if (!toolOnPath("make") || !(toolOnPath("nvcc") || fs::exists("/usr/local/cuda/bin/nvcc")))
    GTEST_SKIP() << "make or nvcc is not installed";
  std::string nvcc = toolOnPath("nvcc") ? "nvcc" : "/usr/local/cuda/bin/nvcc";
  MadeFolder f("old-cuda");
  std::string src = "#include <cuda.h>\n#include "
                    "<cooperative_groups.h>\n__global__ void k() {}\n"
                    "int main() { k<<<1, 64>>>(); return 0; }\n";
  f.write("main.cu", src);
  f.write("Makefile", "ARCH = sm_35\nmain: main.cu\n\t" + nvcc + " -O3 -arch=$(ARCH) main.cu -o main\n");
  auto r = initProject((f.dir / "main.cu").string(), src, InitOptions{2});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_NE(r->text.find("flags = \"-O3\""), std::string::npos) << r->text;
  EXPECT_NE(r->text.find("-arch=sm_35 names an architecture this nvcc does not support"), std::string::npos) << r->text;
  // The toolkit's own headers are the system's, not missing ones.
  EXPECT_EQ(r->text.find("NOT FOUND: cuda.h"), std::string::npos) << r->text;
  EXPECT_EQ(r->text.find("NOT FOUND: cooperative_groups.h"), std::string::npos) << r->text;
}

TEST(Verdict, AProgramThatChecksItselfIsValidatedByItsOwnVerdict) {
  // A program that prints only its verdict (and a time, ignored): a run passes
  // when a line matches `verdict`, fails with the reason when none does, and
  // needs no numbers.
  MadeFolder f("verdict");
  f.write("k.sh", "#!/bin/sh\necho \"Average kernel execution time: 0.$$ (ms)\"\n"
                  "if [ \"$1\" = 2 ]; then echo FAIL; else echo PASS; fi\n");
  std::string toml = "[project]\nname = \"k\"\nsources = "
                     "[\"k.sh\"]\n[build]\ncommand = \"cp {sources} {out} && "
                     "chmod +x {out}\"\n[run]\ncommand = \"{exe} "
                     "{seed}\"\n[output]\nignore = [\"^Average\"]\n";
  f.write("hone.toml", toml + "verdict = \"^PASS$\"\n");
  auto m = loadManifest(f.dir.string());
  ASSERT_TRUE(m) << m.error().message;
  Variant v = referenceVariant(*m);
  BuildResult b = build(*m, v, (f.dir / "b").string());
  ASSERT_TRUE(b.ok) << b.log;
  RunResult pass = runOnce(*m, v, b.exe, (f.dir / "r1").string(), 1);
  EXPECT_TRUE(pass.ok()) << pass.error;
  EXPECT_TRUE(pass.values.empty());
  RunResult fail = runOnce(*m, v, b.exe, (f.dir / "r2").string(), 2);
  ASSERT_FALSE(fail.ok());
  EXPECT_NE(fail.error.find("own check did not pass"), std::string::npos) << fail.error;
  EXPECT_NE(fail.error.find("FAIL"), std::string::npos) << fail.error;
  // Without a verdict the same program has nothing to validate, and says so.
  f.write("hone.toml", toml);
  auto plain = loadManifest(f.dir.string());
  ASSERT_TRUE(plain);
  RunResult none = runOnce(*plain, referenceVariant(*plain), b.exe, (f.dir / "r3").string(), 1);
  EXPECT_NE(none.error.find("no numbers"), std::string::npos) << none.error;
  // A verdict that is not a regular expression is refused where it is written.
  f.write("hone.toml", toml + "verdict = \"(PASS\"\n");
  auto bad = loadManifest(f.dir.string());
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("verdict"), std::string::npos) << bad.error().message;
}

TEST(Init, AProgramThatPrintsPassOrFailGetsAVerdict) {
  std::string src = "#include <stdio.h>\nint main(int argc, char **argv) {\n  "
                    "int ok = argc > 0;\n"
                    "  printf(\"Total time: %f s\\n\", 1.0);\n  "
                    "printf(\"%s\\n\", ok ? \"PASS\" : \"FAIL\");\n}\n";
  MadeFolder f("selfcheck");
  f.write("main.c", src);
  auto r = initProject((f.dir / "main.c").string(), src, InitOptions{2});
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_NE(r->text.find("verdict = \"^\\\\s*PASS\""), std::string::npos) << r->text;
  EXPECT_NE(r->text.find("ignore = [\"^\\\\s*Total time:\"]"), std::string::npos) << r->text;
  f.write("hone.toml", r->text);
  EXPECT_TRUE(loadManifest(f.dir.string()));
  // Printing only "PASS" is no verdict: a program that cannot fail its check is
  // not one that checks.
  std::string noFail = "#include <stdio.h>\nint main(void) { puts(\"PASS\"); return 0; }\n";
  auto r2 = initProject((f.dir / "main.c").string(), noFail, InitOptions{2});
  ASSERT_TRUE(r2);
  EXPECT_EQ(r2->text.find("verdict ="), std::string::npos);
}
