// Machine spaces: every transform against hand-computed results, the split
// algorithms, and the round trip between a space and the root machine.
#include "dsl/MachineSpace.h"

#include <gtest/gtest.h>

using namespace hone::dsl;
using V = std::vector<int64_t>;

namespace {
MachineSpace::Ptr gpus(int64_t nodes, int64_t perNode) { return MachineSpace::root(ProcKind::GPU, nodes, perNode); }
Point2 at(const MachineSpace::Ptr &s, V p) {
  auto r = s->toRoot(p);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().message);
  return r.ok() ? *r : Point2{-1, -1};
}
} // namespace

TEST(SplitAlgorithms, AutoSplitMatchesTheReferenceExample) {
  // Extent 4 split for workload (4, 2, 4) gives (2, 1, 2): every part's work is 2.
  EXPECT_EQ(autoSplitFactors(4, {4, 2, 4}), (V{2, 1, 2}));
}

TEST(SplitAlgorithms, AutoSplitBalancesWorkPerPart) {
  EXPECT_EQ(autoSplitFactors(1, {5, 5}), (V{1, 1}));
  EXPECT_EQ(autoSplitFactors(4, {8, 2}), (V{4, 1}));
  EXPECT_EQ(autoSplitFactors(6, {3, 2}), (V{3, 2}));
  EXPECT_EQ(autoSplitFactors(8, {2, 2, 2}), (V{2, 2, 2}));
  EXPECT_EQ(autoSplitFactors(7, {1, 7}), (V{1, 7}));
  // Ties prefer the greedy split: (2,1) and (1,2) cost the same for (4,4).
  EXPECT_EQ(autoSplitFactors(2, {4, 4}), (V{2, 1}));
  // Ties with the greedy split absent keep enumeration order: 4 over (2,4)
  // ties (1,4) and (2,2); greedy gives (2,2).
  EXPECT_EQ(autoSplitFactors(4, {2, 4}), (V{2, 2}));
  for (int64_t n : {1, 2, 3, 4, 6, 8, 12, 16, 30, 64}) {
    auto f = autoSplitFactors(n, {7, 3, 5});
    EXPECT_EQ(f[0] * f[1] * f[2], n) << n;
  }
}

TEST(SplitAlgorithms, GreedyAndBalanced) {
  EXPECT_EQ(greedySplitFactors(12, {4, 6}), (V{4, 3})); // 3 to dim 1 (6), 2 to dim 0 (4), 2 to dim 0 (tie, first)
  EXPECT_EQ(greedySplitFactors(1, {4, 6}), (V{1, 1}));
  EXPECT_EQ(balanceSplitFactors(6, 2), (V{3, 2}));
  EXPECT_EQ(balanceSplitFactors(8, 3), (V{2, 2, 2}));
  EXPECT_EQ(balanceSplitFactors(12, 2), (V{6, 2})); // smallest primes first, as the runtime: not always the most square
  EXPECT_EQ(balanceSplitFactors(7, 2), (V{7, 1}));
  EXPECT_EQ(primeFactors(360), (V{2, 2, 2, 3, 3, 5}));
  EXPECT_EQ(primeFactors(1), V{});
  EXPECT_EQ(primeFactors(137 * 2), (V{2, 137}));
}

TEST(MachineSpace, RootIsNodesByProcessors) {
  auto m = gpus(2, 4);
  EXPECT_EQ(m->dims(), (V{2, 4}));
  EXPECT_EQ(m->volume(), 8);
  EXPECT_EQ(at(m, {1, 3}), (Point2{1, 3}));
}

TEST(MachineSpace, MergeMakesTheSecondDimensionFastest) {
  auto m = *gpus(2, 4)->merge(0, 1);
  EXPECT_EQ(m->dims(), (V{8}));
  EXPECT_EQ(at(m, {5}), (Point2{1, 1})); // 5 = 1 * 4 + 1
  auto r = *gpus(2, 4)->merge(1, 0); // merged into dim 0 (= 1 - 1), nodes fastest
  EXPECT_EQ(r->dims(), (V{8}));
  EXPECT_EQ(at(r, {5}), (Point2{1, 2})); // 5 = 2 * 2 + 1
}

TEST(MachineSpace, AMergedEmptySpaceIsOutOfBoundNotADivisionByZero) {
  // Machine(GPU) on a host without GPUs: 1 node x 0 GPUs. Merged, it has no processor at all;
  // indexing it is the ordinary out-of-bound error (it was an integer division by zero, which
  // killed hone eval and, in a compiled mapper, the Legion application).
  auto m = *gpus(1, 0)->merge(0, 1);
  EXPECT_EQ(m->dims(), (V{0}));
  auto r = m->toRoot({0});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("Slice processor index out of bound"), std::string::npos) << r.error().message;
  auto swapped = *gpus(1, 0)->merge(1, 0);
  EXPECT_FALSE(swapped->toRoot({0}).ok());
}

TEST(MachineSpace, SplitSendsIJToIPlusJTimesFactor) {
  auto m = *gpus(1, 8)->split(1, 2);
  EXPECT_EQ(m->dims(), (V{1, 2, 4}));
  EXPECT_EQ(at(m, {0, 1, 3}), (Point2{0, 7})); // 1 + 3 * 2
  EXPECT_FALSE(gpus(1, 8)->split(1, 3).ok()) << "3 does not divide 8";
}

TEST(MachineSpace, SwapSliceReverse) {
  auto s = *gpus(2, 4)->swap(0, 1);
  EXPECT_EQ(s->dims(), (V{4, 2}));
  EXPECT_EQ(at(s, {3, 1}), (Point2{1, 3}));
  auto sl = *gpus(2, 4)->slice(1, 1, 2);
  EXPECT_EQ(sl->dims(), (V{2, 2}));
  EXPECT_EQ(at(sl, {1, 1}), (Point2{1, 2}));
  EXPECT_FALSE(gpus(2, 4)->slice(1, 2, 4).ok());
  auto rv = *gpus(2, 4)->reverse(1);
  EXPECT_EQ(at(rv, {0, 0}), (Point2{0, 3}));
  EXPECT_FALSE(gpus(2, 4)->reverse(2).ok());
}

TEST(MachineSpace, BalanceAndAutoSplitFirstNewDimensionFastest) {
  auto b = *gpus(1, 6)->balanceSplit(1, 2);
  EXPECT_EQ(b->dims(), (V{1, 3, 2}));
  EXPECT_EQ(at(b, {0, 2, 1}), (Point2{0, 5})); // 2 + 1 * 3
  EXPECT_FALSE(gpus(1, 6)->balanceSplit(1, 4).ok());
  auto a = *gpus(4, 4)->autoSplit(0, {4, 2, 4});
  EXPECT_EQ(a->dims(), (V{2, 1, 2, 4}));
  EXPECT_EQ(at(a, {1, 0, 1, 3}), (Point2{3, 3})); // 1 + 0 * 2 + 1 * 2
  auto g = *gpus(4, 4)->greedySplit(1, {1, 8});
  EXPECT_EQ(g->dims(), (V{4, 1, 4}));
  EXPECT_FALSE(gpus(4, 4)->autoSplit(0, {4, 0}).ok());
}

TEST(MachineSpace, BoundsAreCheckedAtTheRootWithTheRuntimesMessages) {
  auto m = gpus(2, 4);
  auto node = m->toRoot({2, 0});
  ASSERT_FALSE(node.ok());
  EXPECT_NE(node.error().message.find("Sharding node index out of bound"), std::string::npos);
  auto proc = m->toRoot({0, 4});
  ASSERT_FALSE(proc.ok());
  EXPECT_NE(proc.error().message.find("Slice processor index out of bound"), std::string::npos);
  EXPECT_FALSE(m->toRoot({0}).ok()) << "wrong number of coordinates";
  // As in the runtime, a coordinate past its own extent that maps back inside
  // the machine is accepted: the check happens at the root.
  auto split = *gpus(1, 4)->split(1, 2);
  EXPECT_EQ(at(split, {0, 2, 0}), (Point2{0, 2}));
}

TEST(MachineSpace, FromRootInvertsToRootThroughAChainOfTransforms) {
  auto m = *(*(*(*gpus(4, 6)->autoSplit(0, {4, 4}))->balanceSplit(2, 2))->swap(0, 1))->reverse(3);
  for (int64_t n = 0; n < 4; ++n)
    for (int64_t p = 0; p < 6; ++p) {
      auto pt = m->fromRoot({n, p});
      ASSERT_TRUE(pt.ok()) << pt.error().message;
      EXPECT_EQ(at(m, *pt), (Point2{n, p}));
    }
}

TEST(MachineShape, ParsesSpecsAndRejectsBadOnes) {
  auto s = MachineShape::parse("nodes=2,gpus=4,cpus=8");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->nodes, 2);
  EXPECT_EQ(s->count(ProcKind::GPU), 4);
  EXPECT_EQ(s->count(ProcKind::OMP), 0);
  EXPECT_TRUE(s->hasMemory(ProcKind::GPU, MemKind::FBMEM));
  EXPECT_FALSE(s->hasMemory(ProcKind::CPU, MemKind::FBMEM));
  EXPECT_EQ(s->describe(), "2 nodes x (8 CPU, 4 GPU)");
  EXPECT_FALSE(MachineShape::parse("nodes=0").ok());
  EXPECT_FALSE(MachineShape::parse("gpus").ok());
  EXPECT_FALSE(MachineShape::parse("tpus=4").ok());
  EXPECT_FALSE(MachineShape::parse("gpus=-1").ok());
}
