// The static occupancy of CUDA kernels: the Occupancy Calculator's rules on
// published and worked configurations, a cross-check against NVIDIA's own
// cuda_occupancy.h where the CUDA toolkit is installed, launches read from
// source, the manifest's [gpu] table, and the findings and knob preferences the
// diagnosis derives from them.
#include "kernel/Occupancy.h"
#include "kernel/Diagnose.h"
#include "kernel/Manifest.h"
#include "kernel/Profile.h"
#include "kernel/Runner.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <climits>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#ifdef HONE_CUDA_OCCUPANCY_H
#include HONE_CUDA_OCCUPANCY_H
#endif

using namespace hone::kernel;

namespace {

GpuArch archOf(const char *name) {
  auto a = findGpuArch(name);
  EXPECT_TRUE(a) << name;
  return a ? *a : GpuArch{};
}

bool limitedBy(const Occupancy &o, OccupancyLimit l) {
  return std::find(o.limiting.begin(), o.limiting.end(), l) != o.limiting.end();
}

} // namespace

TEST(Occupancy, ArchitecturesAreNamedAsNvccAndTheGuideNameThem) {
  for (const char *name : {"sm_90", "compute_90", "90", "9.0", "sm_90a"})
    EXPECT_EQ(findGpuArch(name).value_or(GpuArch{}).name, "sm_90") << name;
  EXPECT_EQ(findGpuArch("sm_86")->maxThreadsPerSm, 1536);
  EXPECT_EQ(findGpuArch("sm_75")->maxBlocksPerSm, 16);
  EXPECT_FALSE(findGpuArch("sm_52"));
  EXPECT_FALSE(findGpuArch("sm_9000"));
  EXPECT_FALSE(findGpuArch("gfx90a"));
  EXPECT_FALSE(findGpuArch(std::string(100000, '9')));
  EXPECT_GE(knownGpuArchs().size(), 6u);
}

TEST(Occupancy, TheBestPracticesGuidesRegisterExample) {
  // CUDA C++ Best Practices Guide, "Calculating Occupancy": on compute
  // capability 7.0, 128-thread blocks using 37 registers per thread give 75%
  // with 12 blocks per SM; 320-thread blocks with the same registers give 63%,
  // four blocks.
  GpuArch v100 = archOf("sm_70");
  Occupancy small = occupancy(v100, {128, 37, 0, 0, 0});
  EXPECT_EQ(small.blocksPerSm, 12);
  EXPECT_DOUBLE_EQ(small.fraction, 0.75);
  EXPECT_TRUE(limitedBy(small, OccupancyLimit::Registers));
  Occupancy large = occupancy(v100, {320, 37, 0, 0, 0});
  EXPECT_EQ(large.blocksPerSm, 4);
  EXPECT_EQ(large.activeWarps, 40);
  EXPECT_DOUBLE_EQ(large.fraction, 0.625); // the guide rounds it to 63%
  // The same guide: at most 32 registers per thread for 100% on these devices.
  EXPECT_DOUBLE_EQ(occupancy(v100, {256, 32, 0, 0, 0}).fraction, 1.0);
  EXPECT_LT(occupancy(v100, {256, 33, 0, 0, 0}).fraction, 1.0);
}

TEST(Occupancy, WorkedConfigurationsOnTwoMoreArchitectures) {
  // sm_90, 256 threads: 44 registers -> 1536 per warp, 10 warps per
  // sub-partition, 5 blocks, 62.5%.
  GpuArch h100 = archOf("sm_90");
  BlockShape matmul{256, 44, 0, 0, 0};
  Occupancy o = occupancy(h100, matmul);
  EXPECT_EQ(o.blocksPerSm, 5);
  EXPECT_DOUBLE_EQ(o.fraction, 0.625);
  EXPECT_EQ(o.limiting, std::vector<OccupancyLimit>{OccupancyLimit::Registers});
  OccupancyAdvice adv = adviseOccupancy(h100, matmul);
  ASSERT_TRUE(adv.registers);
  EXPECT_EQ(*adv.registers,
            40); // 1280 per warp: 12 warps per sub-partition, 6 blocks, 75%
  EXPECT_DOUBLE_EQ(adv.registersFraction, 0.75);
  ASSERT_TRUE(adv.fullRegisters);
  EXPECT_EQ(*adv.fullRegisters, 32);
  std::string text = describeOccupancy("matmul", h100, matmul, o, adv);
  EXPECT_NE(text.find("44 registers per thread limits occupancy to 62.5% on sm_90"), std::string::npos) << text;
  EXPECT_NE(text.find("40 registers would give 75%"), std::string::npos) << text;
  EXPECT_NE(text.find("32 would give 100%"), std::string::npos) << text;

  // sm_80, shared memory: 48 KiB static + the 1 KiB reserve per block, 164 KiB
  // per SM: 3 blocks.
  GpuArch a100 = archOf("sm_80");
  BlockShape tiled{256, 32, 48 * 1024, 0, 1};
  Occupancy s = occupancy(a100, tiled);
  EXPECT_EQ(s.blocksPerSm, 3);
  EXPECT_EQ(s.sharedPerBlock, 49 * 1024);
  EXPECT_DOUBLE_EQ(s.fraction, 24.0 / 64);
  EXPECT_TRUE(limitedBy(s, OccupancyLimit::SharedMemory));
  OccupancyAdvice sa = adviseOccupancy(a100, tiled);
  ASSERT_TRUE(sa.shared);
  EXPECT_EQ(*sa.shared,
            40 * 1024); // 41 KiB with the reserve: four blocks in 164 KiB
  EXPECT_DOUBLE_EQ(sa.sharedFraction, 0.5);

  // sm_86, the limit of 16 blocks: 32-thread blocks fill a third of 48 warps;
  // 96 threads fill them.
  GpuArch ga102 = archOf("sm_86");
  Occupancy b = occupancy(ga102, {32, 16, 0, 0, 0});
  EXPECT_EQ(b.blocksPerSm, 16);
  EXPECT_EQ(b.limiting, std::vector<OccupancyLimit>{OccupancyLimit::Blocks});
  EXPECT_NEAR(b.fraction, 1.0 / 3, 1e-12);
  OccupancyAdvice ba = adviseOccupancy(ga102, {32, 16, 0, 0, 0});
  ASSERT_FALSE(ba.blockSizes.empty());
  EXPECT_EQ(ba.blockSizes.front(), 96);
  EXPECT_DOUBLE_EQ(ba.blockFraction, 1.0);

  // sm_75 (Turing): 1024 threads per SM, so 44 registers do not bind at 256
  // threads.
  Occupancy t = occupancy(archOf("sm_75"), matmul);
  EXPECT_DOUBLE_EQ(t.fraction, 1.0);
  EXPECT_TRUE(limitedBy(t, OccupancyLimit::Warps));
  EXPECT_FALSE(limitedBy(t, OccupancyLimit::Registers));

  // sm_90 barriers: 16 named barriers per block leave 64 / 16 = 4 blocks.
  Occupancy bars = occupancy(h100, {32, 16, 0, 0, 16});
  EXPECT_EQ(bars.blocksPerSm, 4);
  EXPECT_TRUE(limitedBy(bars, OccupancyLimit::Barriers));
}

TEST(Occupancy, WhatCannotLaunchSaysWhy) {
  GpuArch a100 = archOf("sm_80");
  Occupancy threads = occupancy(a100, {1025, 32, 0, 0, 0});
  EXPECT_EQ(threads.blocksPerSm, 0);
  EXPECT_NE(threads.unlaunchable.find("1025 threads"), std::string::npos) << threads.unlaunchable;
  Occupancy regs = occupancy(a100, {1024, 255, 0, 0, 0});
  EXPECT_EQ(regs.blocksPerSm, 0);
  EXPECT_NE(regs.unlaunchable.find("255 registers"), std::string::npos) << regs.unlaunchable;
  Occupancy shared = occupancy(archOf("sm_75"), {128, 32, 0, 70 * 1024, 0});
  EXPECT_EQ(shared.blocksPerSm, 0);
  EXPECT_NE(shared.unlaunchable.find("shared memory"), std::string::npos) << shared.unlaunchable;
  EXPECT_NE(describeOccupancy("k", a100, {1025, 32, 0, 0, 0}, threads, {}).find("cannot launch"), std::string::npos);
  // Numbers past any real report neither overflow nor loop for long.
  BlockShape absurd{256, INT_MAX, INT64_MAX / 4, 0, INT_MAX};
  Occupancy o = occupancy(a100, absurd);
  EXPECT_EQ(o.blocksPerSm, 0);
  adviseOccupancy(a100, absurd);
}

#ifdef HONE_CUDA_OCCUPANCY_H
TEST(Occupancy, AgreesWithNvidiasOccupancyHeaderEverywhere) {
  // NVIDIA's cuda_occupancy.h (host code in the CUDA toolkit) computes the
  // calculator's result from a device's properties: given each architecture's
  // limits, it must agree with hone on every shape.
  int compared = 0;
  for (const auto &name : knownGpuArchs()) {
    GpuArch a = *findGpuArch(name);
    cudaOccDeviceProp props;
    props.computeMajor = a.major;
    props.computeMinor = a.minor;
    props.maxThreadsPerBlock = a.maxThreadsPerBlock;
    props.maxThreadsPerMultiprocessor = a.maxThreadsPerSm;
    props.regsPerBlock = a.registersPerBlock;
    props.regsPerMultiprocessor = a.registersPerSm;
    props.warpSize = 32;
    props.sharedMemPerBlock = static_cast<size_t>(a.sharedPerBlock);
    props.sharedMemPerMultiprocessor = static_cast<size_t>(a.sharedPerSm);
    props.numSms = 100;
    props.sharedMemPerBlockOptin = static_cast<size_t>(a.sharedPerBlockOptin);
    props.reservedSharedMemPerBlock = static_cast<size_t>(a.sharedReservedPerBlock);
    for (int threads : {1, 32, 33, 64, 96, 100, 128, 192, 256, 320, 384, 512, 640, 768, 1024})
      for (int regs : {0, 8, 16, 24, 32, 37, 40, 44, 48, 56, 64, 72, 96, 128, 168, 200, 255})
        for (int64_t smem : {0, 100, 1024, 4096, 12000, 24576, 40000, 49152, 65536, 99 * 1024, 160000, 227 * 1024})
          for (int barriers : {0, 1, 3, 16}) {
            cudaOccFuncAttributes attr;
            attr.maxThreadsPerBlock = 1024;
            attr.numRegs = regs;
            attr.sharedSizeBytes = 0;
            attr.partitionedGCConfig = PARTITIONED_GC_OFF;
            attr.shmemLimitConfig = FUNC_SHMEM_LIMIT_OPTIN; // a program asking for more opts in
            attr.maxDynamicSharedSizeBytes = static_cast<size_t>(smem);
            attr.numBlockBarriers = barriers;
            cudaOccDeviceState state;
            cudaOccResult result;
            cudaOccError err = cudaOccMaxActiveBlocksPerMultiprocessor(&result, &props, &attr, &state, threads,
                                                                       static_cast<size_t>(smem));
            Occupancy o = occupancy(a, {threads, regs, 0, smem, barriers});
            if (err != CUDA_OCC_SUCCESS) {
              EXPECT_EQ(o.blocksPerSm, 0) << name << " " << threads << " " << regs << " " << smem;
              continue;
            }
            ASSERT_EQ(o.blocksPerSm, result.activeBlocksPerMultiprocessor)
                << name << ": " << threads << " threads, " << regs << " registers, " << smem << " bytes, " << barriers
                << " barriers";
            ++compared;
          }
  }
  EXPECT_GT(compared, 10000);
}
#else
TEST(Occupancy, AgreesWithNvidiasOccupancyHeaderEverywhere) {
  GTEST_SKIP() << "cuda_occupancy.h not found at configure time (install the "
                  "CUDA toolkit and reconfigure)";
}
#endif

TEST(Occupancy, KernelNamesAsLaunchesWriteThem) {
  EXPECT_EQ(kernelBaseName("matmul(float const*, float const*, float*)"), "matmul");
  EXPECT_EQ(kernelBaseName("void ns::inner::reduce<float, 256>(float const*, float*)"), "reduce");
  EXPECT_EQ(kernelBaseName("k"), "k");
  EXPECT_EQ(kernelBaseName("ns::k<ns::pair<int, int> >"), "k");
}

TEST(Occupancy, LaunchesAreReadFromTheSource) {
  std::string src = R"(#include <cstdio>
#ifndef BLOCK
#define BLOCK 16
#endif
#define THREADS (2 * 128)
static const int WIDTH = 8;
// a comment with k<<<1, 1>>>() in it
__global__ void matmul(float *a) {}
template <typename T> __global__ void reduce(T *x) {}
namespace ns { __global__ void k(int *p) {} }
int main(int argc, char **argv) {
  dim3 block(BLOCK, BLOCK), grid(64, 64);
  matmul<<<grid, block>>>(0);
  reduce<float><<<100, THREADS, THREADS * sizeof(float), 0>>>(0);
  ns::k<<<1, dim3(WIDTH, 4, 2)>>>(0);
  int n = argc * 32;
  matmul<<<grid, n>>>(0);
  const char *s = "x<<<1, 2>>>";
}
)";
  auto none = [](const std::string &) -> std::optional<double> { return std::nullopt; };
  auto launches = findLaunches("m.cu", src, none);
  ASSERT_EQ(launches.size(), 4u);
  EXPECT_EQ(launches[0].kernel, "matmul");
  EXPECT_EQ(launches[0].line, 13);
  ASSERT_TRUE(launches[0].threads);
  EXPECT_EQ(*launches[0].threads, 256);
  EXPECT_EQ(launches[1].kernel, "reduce");
  EXPECT_EQ(launches[1].threads.value_or(0), 256);
  EXPECT_EQ(launches[1].dynamicShared.value_or(0), 1024);
  EXPECT_EQ(launches[2].kernel, "k");
  EXPECT_EQ(launches[2].threads.value_or(0), 64);
  EXPECT_FALSE(launches[3].threads);
  EXPECT_NE(launches[3].unresolved.find("'n'"), std::string::npos) << launches[3].unresolved;
  // A knob's value (the variant's -DBLOCK) comes before the file's own #define.
  auto knob = [](const std::string &n) -> std::optional<double> {
    return n == "BLOCK" ? std::optional<double>(32) : std::nullopt;
  };
  EXPECT_EQ(findLaunches("m.cu", src, knob)[0].threads.value_or(0), 1024);
  // Hostile text: unterminated launches, huge arguments and self-referencing
  // defines end quickly.
  std::string hostile =
      "#define A A\n#define B (B + 1)\nk<<<1, A>>>(); k<<<1, B>>>(); k<<<" + std::string(200000, '(') + "\nk<<<1,";
  auto h = findLaunches("h.cu", hostile, none);
  ASSERT_GE(h.size(), 2u);
  EXPECT_FALSE(h[0].threads);
  EXPECT_FALSE(h[1].threads);
}

namespace {

struct GpuProject {
  std::filesystem::path dir;
  explicit GpuProject(const std::string &toml, const std::string &source) {
    static int count = 0;
    dir = std::filesystem::temp_directory_path() /
          ("hone-occ-" + std::to_string(::getpid()) + "-" + std::to_string(++count));
    std::filesystem::create_directories(dir);
    std::ofstream(dir / "hone.toml") << toml;
    std::ofstream(dir / "k.cu") << source;
  }
  ~GpuProject() { std::filesystem::remove_all(dir); }
};

const char *kGpuToml = R"([project]
name = "k"
language = "cuda"
sources = ["k.cu"]
[build]
command = "nvcc {cflags} {defines} {sources} -o {out}"
[run]
command = "{exe} {seed}"
[gpu]
archs = ["sm_90"]
[[knob]]
name = "BLOCK"
role = "tile"
values = [8, 16, 32]
default = 16
[[knob]]
name = "flags"
kind = "flags"
values = ["", "-O3", "-maxrregcount=40", "-Xptxas -O3 -maxrregcount=32", "-maxrregcount=64"]
)";

const char *kGpuSource = R"(#ifndef BLOCK
#define BLOCK 16
#endif
__global__ void matmul(const float *a, float *c) {}
int main() {
  dim3 block(BLOCK, BLOCK);
  matmul<<<64, block>>>(0, 0);
}
)";

} // namespace

TEST(Occupancy, TheProfileNamesTheBindingLimitAndTheKnobValuesThatLiftIt) {
  GpuProject p(kGpuToml, kGpuSource);
  auto m = loadManifest(p.dir.string());
  ASSERT_TRUE(m) << m.error().message;
  ASSERT_EQ(m->gpuArchs, std::vector<std::string>{"sm_90"});
  PtxasKernel k;
  k.name = "matmul(float const*, float*)";
  k.registers = 44;
  k.arch = "sm_90";
  PtxasKernel older = k;
  older.arch = "sm_75"; // compiled for the build's own target too: not one of
                        // [gpu] archs
  auto reports = projectOccupancy(*m, referenceVariant(*m), {k, older});
  ASSERT_EQ(reports.size(), 1u);
  const KernelOccupancy &r = reports[0];
  EXPECT_EQ(r.launch, "k.cu:7");
  EXPECT_EQ(r.shape.threads, 256);
  EXPECT_DOUBLE_EQ(r.occupancy.fraction, 0.625);
  // -maxrregcount=32 reaches 100%, 40 gives 75%, 64 nothing; BLOCK 8 (64
  // threads) keeps 62.5% and 32 (1024 threads) lowers it: only the register
  // caps are preferred, the best first.
  ASSERT_TRUE(r.prefer.count("flags"));
  EXPECT_EQ(r.prefer.at("flags"), (std::vector<std::string>{"-Xptxas -O3 -maxrregcount=32", "-maxrregcount=40"}));
  EXPECT_FALSE(r.prefer.count("BLOCK"));

  KernelProfile prof;
  prof.ptxas = {k};
  prof.occupancy = reports;
  auto d = diagnose(prof);
  const nlohmann::json *found = nullptr;
  for (const auto &b : d["bottlenecks"])
    if (b["kind"] == "occupancy-registers")
      found = &b;
  ASSERT_TRUE(found) << d.dump(2);
  EXPECT_NE((*found)["detail"].get<std::string>().find("62.5% on sm_90"), std::string::npos);
  EXPECT_EQ((*found)["numbers"]["registers_for_more"], 40);
  EXPECT_EQ((*found)["prefer"]["flags"][0], "-Xptxas -O3 -maxrregcount=32");
  EXPECT_EQ((*found)["file"], "k.cu");
  for (const auto &b : diagnosis(prof).evidence.bottlenecks)
    for (const auto &[name, q] : b.numbers)
      EXPECT_FALSE(q.unit.empty()) << b.kind << " cites " << name << " without a unit";
  EXPECT_EQ(toJson(prof)["occupancy"][0]["limiting"][0], "registers");

  // A kernel whose block is known only at run time: the profile says so and how
  // to tell hone.
  GpuProject q(kGpuToml, "__global__ void matmul(const float *a, float *c) {}\nint "
                         "main(int n, char **) { matmul<<<1, n>>>(0, 0); }\n");
  auto mq = loadManifest(q.dir.string());
  ASSERT_TRUE(mq);
  auto unknown = projectOccupancy(*mq, referenceVariant(*mq), {k});
  ASSERT_EQ(unknown.size(), 1u);
  EXPECT_NE(unknown[0].unknown.find("[[gpu.launch]]"), std::string::npos) << unknown[0].unknown;
}

TEST(Occupancy, TheManifestSaysLaunchesAndArchitectures) {
  std::string base = std::string(kGpuToml);
  GpuProject p(base + "[[gpu.launch]]\nkernel = \"matmul\"\nblock = \"BLOCK * "
                      "8\"\nshared_bytes = 4096\n",
               "__global__ void matmul(const float *a, float *c) {}\n");
  auto m = loadManifest(p.dir.string());
  ASSERT_TRUE(m) << m.error().message;
  PtxasKernel k;
  k.name = "matmul(float const*, float*)";
  k.registers = 32;
  k.arch = "sm_90";
  auto r = projectOccupancy(*m, referenceVariant(*m), {k});
  ASSERT_EQ(r.size(), 1u);
  EXPECT_EQ(r[0].shape.threads, 128);
  EXPECT_EQ(r[0].shape.dynamicShared, 4096);
  EXPECT_EQ(r[0].launch, "hone.toml:" + std::to_string(m->gpuLaunches[0].line));

  auto bad = [&](const std::string &extra, const std::string &lang = "cuda") {
    std::string toml = base;
    toml.replace(toml.find("\"cuda\""), 6, "\"" + lang + "\"");
    auto mm = parseManifest((p.dir / "hone.toml").string(), toml + extra);
    return mm ? std::string() : mm.error().message;
  };
  std::string toml = base;
  toml.replace(toml.find("archs = [\"sm_90\"]"), 17, "archs = [\"sm_91\"]");
  auto unknownArch = parseManifest((p.dir / "hone.toml").string(), toml);
  ASSERT_FALSE(unknownArch);
  EXPECT_NE(unknownArch.error().message.find("hone.toml:10"), std::string::npos) << unknownArch.error().message;
  EXPECT_NE(unknownArch.error().message.find("sm_91"), std::string::npos);
  EXPECT_NE(bad("[[gpu.launch]]\nkernel = \"k\"\nblock = \"BLOCK *\"\n").find("block"), std::string::npos);
  EXPECT_NE(bad("[[gpu.launch]]\nkernel = \"k\"\nblock = true\n").find("expected a number"), std::string::npos);
  EXPECT_NE(bad("[[gpu.launch]]\nkernel = \"k\"\nblock = 3\nblok = 3\n").find("blok"), std::string::npos);
  EXPECT_NE(bad("", "c").find("CUDA"), std::string::npos);
}
