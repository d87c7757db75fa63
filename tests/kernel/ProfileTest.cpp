// The profilers' parsers: real outputs captured on this project's machine
// (cachegrind, gcc and clang remarks, perf stat, llvm-mca, ptxas, an asm
// listing) and Nsight Compute CSV written from its documented format; every
// parser also gets input that is not its format, cut short, or hostile.
#include "kernel/Diagnose.h"
#include "kernel/Profile.h"

#include "TestUtil.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>

using namespace hone::kernel;
using hone::test::readFile;
using hone::test::sourcePath;

namespace {
std::string fixture(const std::string &name) { return readFile(sourcePath("tests/kernel/fixtures/" + name)); }
double ev(const CostLine &c, const char *e) { return c.events.count(e) ? c.events.at(e) : 0; }
} // namespace

TEST(Cachegrind, ReadsARealOutputPerFunctionAndLine) {
  auto d = parseCachegrind(fixture("cachegrind-matmul.out"));
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_EQ(d->events.size(), 9u);
  EXPECT_EQ(d->totals.at("Ir"), 9742175);  // the summary line
  EXPECT_EQ(d->totals.at("D1mr"), 1065834);
  // Lines come hottest first; the line that misses D1 most is matmul.c's inner loop, on most of its reads.
  ASSERT_FALSE(d->lines.empty());
  for (size_t i = 1; i < d->lines.size(); ++i)
    EXPECT_GE(ev(d->lines[i - 1], "Ir"), ev(d->lines[i], "Ir"));
  const CostLine *missing = &d->lines.front();
  for (const auto &l : d->lines)
    if (ev(l, "D1mr") > ev(*missing, "D1mr"))
      missing = &l;
  const CostLine &hot = *missing;
  EXPECT_NE(hot.file.find("matmul.c"), std::string::npos);
  EXPECT_EQ(hot.function, "main");
  EXPECT_GT(ev(hot, "D1mr") / ev(hot, "Dr"), 0.3);
  // Functions are sums of their lines.
  double sum = 0;
  for (const auto &l : d->lines)
    if (l.file == hot.file && l.function == hot.function)
      sum += ev(l, "Ir");
  bool found = false;
  for (const auto &f : d->functions)
    if (f.file == hot.file && f.function == hot.function) {
      EXPECT_EQ(ev(f, "Ir"), sum);
      found = true;
    }
  EXPECT_TRUE(found);
}

TEST(Cachegrind, CompressedNamesAndMissingCounts) {
  auto d = parseCachegrind("events: Ir Dr D1mr\nfl=(1) k.c\nfn=(1) kernel\n10 100 50 25\n11 7\nfn=(2) other\n3 1 1\n"
                           "fl=(1)\nfn=(1)\n10 1 1 1\nfn=(below main)\n4 2\n");
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_EQ(d->totals.at("Ir"), 111);
  ASSERT_GE(d->lines.size(), 2u);
  EXPECT_EQ(d->lines.front().file, "k.c");
  EXPECT_EQ(d->lines.front().function, "kernel");
  EXPECT_EQ(d->lines.front().line, 10);
  EXPECT_EQ(ev(d->lines.front(), "Ir"), 101); // the two blocks of line 10 add up
  EXPECT_EQ(ev(d->lines.front(), "D1mr"), 26);
}

TEST(Cachegrind, ACommandWithNewlinesIsPartOfItsHeader) {
  // valgrind writes `cmd:` verbatim: a shell script run under it (stderr sent to a file) spans lines.
  auto d = parseCachegrind("desc: I1 cache: 32768 B\ncmd: sh -c exec 2>/tmp/run/.hone-stderr\n/tmp/run/prog 1\n"
                           "events: Ir\nfl=k.c\nfn=main\n3 10\nsummary: 10\n");
  ASSERT_TRUE(d) << d.error().message;
  EXPECT_EQ(d->totals.at("Ir"), 10);
  // After the events line, a stray line is still an error.
  EXPECT_FALSE(parseCachegrind("cmd: x\nevents: Ir\nfl=k.c\nfn=main\n/tmp/run/prog\n"));
}

TEST(Cachegrind, RejectsWhatIsNotCachegrind) {
  for (const char *bad : {"", "hello world\n", "events: Ir\nfl=(3)\n1 2\n", "10 20 30\n", "events: Ir\nfn=x\n1 2 3\n",
                          "events: Ir\nfn=x\n-1 2\n", "events:\n", "events: Ir\nfn=x\n1 abc\n"}) {
    auto d = parseCachegrind(bad);
    EXPECT_FALSE(d) << "accepted: " << bad;
  }
  auto d = parseCachegrind("events: Ir\nfn=x\n1 2 3\n");
  ASSERT_FALSE(d);
  EXPECT_NE(d.error().message.find("line 3"), std::string::npos) << d.error().message;
}

// Callgrind's inclusive call costs: the line after `calls=` is what the call at that line cost with
// everything the callee ran; inlined code (fi=, fe=) costs lines of the inlined file.
TEST(Callgrind, CallCostsPerCallerLineWithInlinedFilesAndCompressedForms) {
  const char *plain = R"(# callgrind format
version: 1
creator: callgrind-3.19.0
cmd:  /work/prog 1
positions: line
events: Ir
summary: 10000

fl=/work/prog.c
fn=main
12 40
cfi=/usr/lib/libc/fprintf.c
cfn=fprintf
calls=4400 27
12 6000
fi=/work/kernel.h
30 900
cfl=/work/prog.c
cfn=helper
calls=1 50
31 700
fe=/work/prog.c
13 5

fl=/usr/lib/libc/fprintf.c
fn=fprintf
27 6000
totals: 10000
)";
  auto c = parseCallgrindCalls(plain);
  ASSERT_TRUE(c) << c.error().message;
  EXPECT_DOUBLE_EQ(c->total, 10000);
  EXPECT_DOUBLE_EQ(c->lines.at({"/work/prog.c", 12}), 6000); // the self cost of line 12 (40) is not a call's
  EXPECT_DOUBLE_EQ(c->lines.at({"/work/kernel.h", 31}), 700);
  EXPECT_EQ(c->lines.size(), 2u);
  // Compressed names and positions: "(1) name" defines, "(1)" refers; "+N" is relative to the last line.
  const char *compressed = R"(version: 1
events: Ir
summary: 500
fl=(1) /work/prog.c
fn=(1) main
10 5
cfl=(2) /usr/lib/libc/puts.c
cfn=(2) puts
calls=3 0
+2 300
fl=(2)
fn=(2)
0 300
fl=(1)
fn=(1)
15 2
cfl=(1)
cfn=(1)
calls=1 0
* 50
)";
  auto z = parseCallgrindCalls(compressed);
  ASSERT_TRUE(z) << z.error().message;
  EXPECT_DOUBLE_EQ(z->lines.at({"/work/prog.c", 12}), 300);
  EXPECT_DOUBLE_EQ(z->lines.at({"/work/prog.c", 15}), 50); // "*": the last line again
  // Hostile positions and counts: a located error or a number, never a crash.
  auto huge = parseCallgrindCalls("version: 1\nfl=a.c\ncalls=1 0\n99999999999999999999 5\n");
  ASSERT_FALSE(huge);
  EXPECT_NE(huge.error().message.find("line 4"), std::string::npos) << huge.error().message;
  auto nan = parseCallgrindCalls("version: 1\nsummary: nan\n"); // no count: refused, never a NaN total
  EXPECT_TRUE(!nan || !std::isnan(nan->total));
  std::string many = "version: 1\nsummary: 100\nfl=a.c\n";
  for (int i = 0; i < 200000; ++i)
    many += "cfn=f\ncalls=1 0\n7 1\n";
  auto big = parseCallgrindCalls(many);
  ASSERT_TRUE(big) << big.error().message;
  EXPECT_DOUBLE_EQ(big->lines.at({"a.c", 7}), 200000);
  auto notOne = parseCallgrindCalls("hello\nworld\n");
  ASSERT_FALSE(notOne);
  EXPECT_NE(notOne.error().message.find("not a callgrind profile"), std::string::npos);
  auto badTotal = parseCallgrindCalls("version: 1\nsummary: many\n");
  ASSERT_FALSE(badTotal);
  EXPECT_NE(badTotal.error().message.find("line 2"), std::string::npos) << badTotal.error().message;
}

TEST(Remarks, GccSaysWhichLoopsVectorizedAndWhyNot) {
  auto r = parseGccRemarks(fixture("gcc-remarks-matmul.txt"));
  ASSERT_TRUE(r);
  bool optimized = false, missed = false;
  for (const auto &x : *r) {
    EXPECT_FALSE(x.file.empty());
    EXPECT_GT(x.line, 0);
    optimized |= x.kind == "optimized" && x.message.find("vectorized") != std::string::npos;
    missed |= x.kind == "missed" && x.message.find("not vectorized") != std::string::npos;
  }
  EXPECT_TRUE(optimized);
  EXPECT_TRUE(missed);
  // Continuation lines and other output are skipped, not errors.
  auto none = parseGccRemarks("In function 'main':\n scalar_type: const double\nrandom text\n");
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->empty());
}

TEST(Remarks, ClangKindsComeFromTheFlag) {
  auto r = parseClangRemarks(fixture("clang-remarks-matmul.txt"));
  ASSERT_TRUE(r);
  ASSERT_FALSE(r->empty());
  bool analysis = false, missed = false;
  for (const auto &x : *r) {
    EXPECT_EQ(x.pass, "loop-vectorize");
    analysis |= x.kind == "analysis" && x.message.find("reorder floating-point") != std::string::npos;
    missed |= x.kind == "missed";
  }
  EXPECT_TRUE(analysis);
  EXPECT_TRUE(missed);
}

TEST(PerfStat, NotSupportedCountersAreNamedAndSoftwareEventsRead) {
  auto p = parsePerfStat(fixture("perf-stat-matmul.csv"));
  ASSERT_TRUE(p) << p.error().message;
  EXPECT_NEAR(p->counters.at("task-clock"), 217.67, 1e-9);
  EXPECT_EQ(p->units.at("task-clock"), "msec");
  EXPECT_NEAR(p->cpusUtilized, 0.457, 1e-9);
  EXPECT_EQ(p->counters.at("page-faults"), 1607);
  EXPECT_EQ(p->unsupported, (std::vector<std::string>{"cycles", "instructions", "cache-misses"}));
  auto hw = parsePerfStat("1234567,,cycles,1000,100.00,,\n\"2,345\",,instructions,1000,100.00,1.90,insn per cycle\n");
  ASSERT_TRUE(hw);
  EXPECT_EQ(hw->counters.at("cycles"), 1234567);
  EXPECT_EQ(hw->counters.at("instructions"), 2345);
  EXPECT_FALSE(parsePerfStat(""));
  EXPECT_FALSE(parsePerfStat("the program's output\nand more\n"));
  EXPECT_FALSE(parsePerfStat("\"unterminated,,cycles\n"));
}

TEST(LlvmMca, SummaryAndBottleneck) {
  auto m = parseLlvmMca(fixture("llvm-mca-dot.txt"));
  ASSERT_TRUE(m) << m.error().message;
  EXPECT_EQ(m->iterations, 100);
  EXPECT_EQ(m->instructions, 600);
  EXPECT_EQ(m->totalCycles, 314);
  EXPECT_NEAR(m->cyclesPerIteration(), 3.14, 1e-9);
  EXPECT_NEAR(m->ipc, 1.91, 1e-9);
  EXPECT_NEAR(m->blockRThroughput, 1.0, 1e-9);
  EXPECT_NEAR(m->dataDependencies, 60.51, 1e-9);
  EXPECT_NEAR(m->registerDependencies, 60.51, 1e-9);
  EXPECT_EQ(m->resourcePressure, 0);
  EXPECT_FALSE(m->criticalSequence.empty());
  EXPECT_FALSE(parseLlvmMca("Instructions: 5\n"));
  EXPECT_FALSE(parseLlvmMca(""));
  EXPECT_FALSE(parseLlvmMca("Iterations: many\n"));
}

TEST(HotLoop, TheInnermostLoopAroundALine) {
  std::string s = fixture("dot-O2.s");
  std::string loop = extractHotLoop(s, "dot.c", 30);
  ASSERT_FALSE(loop.empty());
  // The dot product's loop: a multiply, an add and the backward branch, and nothing of main's setup.
  EXPECT_NE(loop.find("mulsd"), std::string::npos) << loop;
  EXPECT_NE(loop.find("addsd"), std::string::npos) << loop;
  EXPECT_LT(std::count(loop.begin(), loop.end(), '\n'), 20) << loop;
  EXPECT_EQ(loop.find("call"), std::string::npos) << loop;
  EXPECT_TRUE(extractHotLoop(s, "other.c", 30).empty());
  EXPECT_TRUE(extractHotLoop("", "", 0).empty());
  EXPECT_TRUE(extractHotLoop("jmp .L9\n.L9:\n", "", 0).empty()); // a forward jump is not a loop
  std::string tiny = ".L2:\n\taddq $1, %rax\n\tcmpq %rax, %rdx\n\tjne .L2\n";
  EXPECT_EQ(extractHotLoop(tiny, "", 0), "addq $1, %rax\ncmpq %rax, %rdx\njne .L2\n");
}

TEST(Ptxas, RegistersSharedMemoryAndSpills) {
  auto k = parsePtxas(fixture("ptxas-matmul.txt"));
  ASSERT_TRUE(k) << k.error().message;
  ASSERT_EQ(k->size(), 1u);
  EXPECT_EQ((*k)[0].name, "matmul(float const*, float const*, float*)");
  EXPECT_EQ((*k)[0].registers, 39);
  EXPECT_EQ((*k)[0].sharedBytes, 2048);
  EXPECT_EQ((*k)[0].barriers, 1);
  EXPECT_EQ((*k)[0].spillStores, 0);
  auto spill = parsePtxas("ptxas info    : Compiling entry function '_Z3fooPf' for 'sm_90'\n"
                          "ptxas info    : Function properties for _Z3fooPf\n"
                          "    48 bytes stack frame, 40 bytes spill stores, 36 bytes spill loads\n"
                          "ptxas info    : Used 255 registers, 360 bytes cmem[0]\n");
  ASSERT_TRUE(spill);
  EXPECT_EQ((*spill)[0].name, "foo(float*)");
  EXPECT_EQ((*spill)[0].arch, "sm_90");
  EXPECT_EQ((*spill)[0].spillStores, 40);
  EXPECT_EQ((*spill)[0].spillLoads, 36);
  EXPECT_EQ((*spill)[0].registers, 255);
  EXPECT_FALSE(parsePtxas("nvcc fatal : Unknown option '-foo'\n"));
  EXPECT_FALSE(parsePtxas(""));
  // Numbers past any real report saturate instead of overflowing (found by the ptxas fuzzer).
  auto huge = parsePtxas("ptxas info    : Compiling entry function '_Z3fooPf' for 'sm_90'\n"
                         "ptxas info    : Function properties for _Z3fooPf\n"
                         "    0 bytes stack frame, 1 bytes spill stores, 99999999999999999999999999 bytes spill loads\n"
                         "ptxas info    : Used 99999999999999 registers\n");
  ASSERT_TRUE(huge);
  EXPECT_EQ((*huge)[0].spillLoads, 1'000'000'000'000'000);
  EXPECT_EQ((*huge)[0].registers, INT32_MAX);
  KernelProfile p;
  p.ptxas = *huge;
  EXPECT_FALSE(diagnose(p)["bottlenecks"].empty());
}

TEST(Ncu, DetailsPage) {
  auto k = parseNcuCsv(fixture("ncu-details.csv"));
  ASSERT_TRUE(k) << k.error().message;
  ASSERT_EQ(k->size(), 2u); // two launches (IDs 0 and 1)
  const NcuKernel &a = (*k)[0];
  EXPECT_EQ(a.name, "sweep(const double *, double *)");
  EXPECT_EQ(a.blockSize, "(8, 8, 1)");
  EXPECT_NEAR(a.metrics.at("Duration"), 1234.56, 1e-9);                               // thousands separator
  EXPECT_EQ(a.metrics.at("l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"), 12582912); // quoted, separators
  EXPECT_EQ(a.units.at("Duration"), "usecond");
  EXPECT_FALSE(a.metrics.count("smsp__thread_inst_executed_per_inst_executed.ratio")); // n/a
}

TEST(Ncu, RawPageWithItsUnitsRow) {
  auto k = parseNcuCsv(fixture("ncu-raw.csv"));
  ASSERT_TRUE(k) << k.error().message;
  ASSERT_EQ(k->size(), 2u);
  EXPECT_EQ((*k)[0].metrics.at("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"), 1966080);
  EXPECT_EQ((*k)[0].units.at("gpu__time_duration.sum"), "usecond");
  EXPECT_NEAR((*k)[0].metrics.at("smsp__thread_inst_executed_per_inst_executed.ratio"), 17.3, 1e-9);
  EXPECT_FALSE((*k)[1].metrics.count("gpu__time_duration.sum")); // n/a
}

TEST(Ncu, RejectsBrokenReports) {
  EXPECT_FALSE(parseNcuCsv(""));
  EXPECT_FALSE(parseNcuCsv("==PROF== Connected\n==PROF== Disconnected\n"));
  EXPECT_FALSE(parseNcuCsv("\"ID\",\"Kernel Name\"\n")); // a header and no rows
  auto ragged = parseNcuCsv("\"ID\",\"Kernel Name\",\"Metric Name\",\"Metric Value\"\n\"0\",\"k\",\"x\"\n");
  ASSERT_FALSE(ragged);
  EXPECT_NE(ragged.error().message.find("fields"), std::string::npos);
  EXPECT_FALSE(parseNcuCsv("\"ID\",\"Kernel Name\n"));
}

TEST(OmpSchedules, ClausesOfPragmaLinesAsWritten) {
  std::string src = "#include <omp.h>\n"
                    "#pragma omp parallel for schedule(runtime)\n"
                    "  #  pragma omp for schedule ( dynamic , 16 ) nowait\n"
                    "#pragma omp parallel for \\\n"
                    "    schedule(monotonic: static)\n"
                    "#pragma omp parallel for schedule(nonmonotonic, simd : guided, N / 4)\r\n"
                    "/* #pragma omp parallel for schedule(static) in a comment */\n"
                    "int schedule(int);\n"
                    "#pragma omp parallel for myschedule(dynamic)\n"
                    "#pragma omp parallel for schedule(fastest)\n"
                    "#pragma omp for schedule(auto)";
  auto found = findOmpSchedules("k.c", src);
  ASSERT_EQ(found.size(), 5u);
  EXPECT_EQ(found[0].line, 2);
  EXPECT_EQ(found[0].kind, "runtime");
  EXPECT_EQ(found[0].chunk, "");
  EXPECT_EQ(found[1].line, 3);
  EXPECT_EQ(found[1].kind, "dynamic");
  EXPECT_EQ(found[1].chunk, "16");
  EXPECT_EQ(found[2].line, 4); // the directive's first line
  EXPECT_EQ(found[2].kind, "static");
  EXPECT_EQ(found[3].line, 6);
  EXPECT_EQ(found[3].kind, "guided");
  EXPECT_EQ(found[3].chunk, "N / 4");
  EXPECT_EQ(found[4].kind, "auto");
  EXPECT_EQ(found[4].line, 11);
  // Cut short, unbalanced, empty: nothing, and no crash.
  for (const char *bad : {"#pragma omp for schedule(", "#pragma omp for schedule(dynamic", "#pragma omp \\", "",
                          "#pragma omp for schedule()", "#pragma"})
    EXPECT_TRUE(findOmpSchedules("k.c", bad).empty()) << bad;
  // Hostile sizes stay linear: a directive continued over 200000 lines, a 2 MB line of "schedule"
  // words with no clause, a clause whose chunk never closes.
  std::string continued = "#pragma omp parallel for \\\n";
  for (int i = 0; i < 200000; ++i)
    continued += " private(x) \\\n";
  continued += " schedule(static, 4)\n";
  auto far = findOmpSchedules("k.c", continued);
  ASSERT_EQ(far.size(), 1u);
  EXPECT_EQ(far[0].line, 1);
  EXPECT_EQ(far[0].chunk, "4");
  std::string words = "#pragma omp for";
  for (int i = 0; i < 200000; ++i)
    words += " schedule_";
  EXPECT_TRUE(findOmpSchedules("k.c", words + "\n" + "#pragma omp for schedule(dynamic, " +
                                          std::string(1 << 20, '7')).empty());
}

TEST(Profile, JsonHasTheCommonFieldsAndEachProfilersPart) {
  auto keys = [](const nlohmann::json &j) {
    std::vector<std::string> out;
    for (auto it = j.begin(); it != j.end(); ++it)
      out.push_back(it.key());
    return out;
  };
  // A profiler's lists are written whether it ran or not; its other keys only with what it read.
  KernelProfile p;
  EXPECT_EQ(keys(toJson(p)), (std::vector<std::string>{"cores", "gpu", "ncu", "occupancy", "omp_schedules", "ptxas",
                                                       "remarks", "schema", "skipped", "tools"}));
  p.notes = {"a note"};
  p.cachegrind = *parseCachegrind(fixture("cachegrind-matmul.out"));
  p.breakdown = TimeBreakdown{};
  p.perf = *parsePerfStat(fixture("perf-stat-matmul.csv"));
  p.mca = *parseLlvmMca(fixture("llvm-mca-dot.txt"));
  nlohmann::json j = toJson(p);
  EXPECT_EQ(keys(j),
            (std::vector<std::string>{"breakdown", "cachegrind", "cores", "gpu", "mca", "ncu", "notes", "occupancy",
                                      "omp_schedules", "perf", "ptxas", "remarks", "schema", "skipped", "tools"}));
  EXPECT_EQ(j["breakdown"], toJson(*p.breakdown));
  EXPECT_LE(j["cachegrind"]["functions"].size(), 10u); // the hottest ten functions and twenty lines
  EXPECT_LE(j["cachegrind"]["lines"].size(), 20u);
  EXPECT_EQ(j["cachegrind"]["lines"][0]["line"], p.cachegrind->lines.front().line);
}
