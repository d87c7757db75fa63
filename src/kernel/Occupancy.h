// Theoretical occupancy of a CUDA kernel from what the compiler alone says: the
// registers, shared memory and barriers `ptxas -v` reports, the block the
// program launches with, and the documented per-SM limits of the target
// architecture (the CUDA Occupancy Calculator's rules: warps, registers
// allocated per warp in units of 256 and per sub-partition, shared memory in
// allocation units with the driver's reserve per block, blocks per SM, and
// block barriers from sm_90 on). No GPU is needed. `findLaunches` reads the
// `<<<grid, block, smem>>>` launches of a source file and resolves the block
// size where it is literal, a knob, a #define or a `dim3` of those.
#pragma once

#include "support/Expected.h"

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace hone::kernel {

/// The per-SM limits of one compute capability (CUDA C++ Programming Guide,
/// "Technical Specifications per Compute Capability"; allocation rules as the
/// Occupancy Calculator applies them).
struct GpuArch {
  std::string name; // "sm_90"
  int major = 0, minor = 0;
  int maxThreadsPerBlock = 1024;
  int maxThreadsPerSm = 2048;
  int maxBlocksPerSm = 32;
  int registersPerSm = 65536, registersPerBlock = 65536;
  int maxRegistersPerThread = 255;
  int registerUnit = 256;  // registers are allocated to a warp in units of this many
  int subPartitions = 4;   // a warp's registers come from one quarter of the SM's file
  int64_t sharedPerSm = 0; // the largest shared-memory carveout
  int64_t sharedPerBlock = 48 * 1024, sharedPerBlockOptin = 48 * 1024;
  int64_t sharedReservedPerBlock = 0; // the driver's own, from sm_80 on
  int sharedUnit = 256;
  int barrierFactor = 0; // from sm_90: barriers per SM = blocks per SM x this (0: not a limit)
  int warps() const { return maxThreadsPerSm / 32; }
};

/// "sm_90", "compute_90", "90", "9.0" or "sm_90a"; nullopt when unknown.
std::optional<GpuArch> findGpuArch(const std::string &name);
/// The architectures hone knows, oldest first ("sm_70", ...).
std::vector<std::string> knownGpuArchs();

/// What one block of the kernel needs (from ptxas -v and the launch).
struct BlockShape {
  int threads = 0;
  int registers = 0;         // per thread
  int64_t staticShared = 0;  // bytes smem (ptxas)
  int64_t dynamicShared = 0; // the launch's third argument
  int barriers = 0;          // ptxas "used N barriers"
};

enum class OccupancyLimit { Warps, Registers, SharedMemory, Blocks, Barriers };
std::string_view toString(OccupancyLimit limit);

struct Occupancy {
  int blocksPerSm = 0;
  int activeWarps = 0, maxWarps = 0;
  double fraction = 0; // activeWarps / maxWarps
  // Blocks per SM each resource allows (INT_MAX: no limit).
  int byWarps = 0, byRegisters = 0, byShared = 0, byBlocks = 0, byBarriers = 0;
  std::vector<OccupancyLimit> limiting; // every limit equal to blocksPerSm
  int64_t sharedPerBlock = 0;           // allocated, with the reserve and the unit
  int registersPerBlock = 0;            // allocated
  std::string unlaunchable;             // why no block fits at all (empty: one does)
};

/// The Occupancy Calculator's result for `shape` on `arch`.
Occupancy occupancy(const GpuArch &arch, const BlockShape &shape);

/// What would raise the occupancy, one resource at a time, others held.
struct OccupancyAdvice {
  std::optional<int> registers; // the most registers per thread that gives a higher occupancy
  double registersFraction = 0;
  std::optional<int> fullRegisters; // the most that reaches the best the other limits allow
  double fullRegistersFraction = 0;
  std::optional<int64_t> shared; // the most shared bytes per block (static +
                                 // dynamic) for a higher one
  double sharedFraction = 0;
  std::vector<int> blockSizes; // threads per block (multiples of 32) with the
                               // highest occupancy
  double blockFraction = 0;
};
OccupancyAdvice adviseOccupancy(const GpuArch &arch, const BlockShape &shape);

/// One sentence: "64 registers per thread limit occupancy to 50% on sm_90 (4
/// blocks of 256 threads, 32 of 64 warps); 40 would give 75%".
std::string describeOccupancy(const std::string &kernel, const GpuArch &arch, const BlockShape &shape,
                              const Occupancy &occ, const OccupancyAdvice &advice);

/// A kernel launch `name<<<grid, block, smem, stream>>>` in a source file.
struct KernelLaunch {
  std::string kernel; // the last name component, without template arguments
  std::string file;
  int line = 0;
  std::string blockText, sharedText; // as written (sharedText empty: none)
  std::optional<int> threads;        // resolved threads per block
  std::optional<int64_t> dynamicShared;
  std::string unresolved; // why `threads` is missing
};
/// Values of names: knobs of the variant and -D defines first; nullopt: not
/// known there.
using NameLookup = std::function<std::optional<double>(const std::string &)>;
/// The launches in `text` (file name `file`), block and shared sizes resolved
/// through `lookup`, then the file's own `#define`s and integral constants,
/// then `dim3` variables declared before the launch.
std::vector<KernelLaunch> findLaunches(const std::string &file, const std::string &text, const NameLookup &lookup);

/// A C expression of integers (as in a launch) evaluated through `lookup` and
/// `defines`.
support::Expected<double> evalCExpression(const std::string &text, const NameLookup &lookup);

struct Manifest;
struct PtxasKernel;
struct Variant;

/// The static occupancy of one kernel compiled for one architecture, as the
/// profile reports it.
struct KernelOccupancy {
  std::string kernel, arch;
  std::string launch;  // where the block size comes from: "matmul.cu:51" or
                       // "hone.toml:40"
  std::string unknown; // why no occupancy was computed (no launch, a block only
                       // known at run time)
  BlockShape shape;
  Occupancy occupancy;
  OccupancyAdvice advice;
  std::string text; // describeOccupancy, or the reason
  // Knob values predicted to raise the occupancy (registers and static shared
  // memory held at what ptxas reported for this variant), best first: what the
  // guided agent tries first.
  std::map<std::string, std::vector<std::string>> prefer;
};
/// For each kernel ptxas reported (on each architecture it compiled for; with
/// `[gpu] archs` only those), the launch that runs it (`[[gpu.launch]]`, else
/// the sources' `<<<...>>>`) and its occupancy.
std::vector<KernelOccupancy> projectOccupancy(const Manifest &m, const Variant &v,
                                              const std::vector<PtxasKernel> &kernels);

/// "matmul(float const*, float*)" or "void ns::k<int>(int*)" -> "k" (what a
/// launch names).
std::string kernelBaseName(const std::string &demangled);

} // namespace hone::kernel
