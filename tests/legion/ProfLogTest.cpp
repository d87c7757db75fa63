// Reading Legion Prof binary logs: logs written here in Legion's format (a preamble that declares
// each record type, then records), gzip-compressed and plain, whole and cut short, and malformed.
#include "legion/ProfLog.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <unistd.h>

namespace {

using hone::legion::readLegionProfile;
using hone::legion::toProfileJson;

/// Builds a log: the preamble as Legion 25.06 writes it (a subset, plus a type hone does not
/// read), then records appended with the typed helpers below.
class LogWriter {
public:
  LogWriter() {
    text_ = "FileType: BinaryLegionProf v: 1.0\n"
            "MachineDesc {id:1, node_id:unsigned:4, num_nodes:unsigned:4, version:unsigned:4, "
            "hostname:string:-1, host_id:unsigned long long:8, process_id:unsigned:4}\n"
            "MaxDimDesc {id:2, max_dim:maxdim:4}\n"
            "ProcDesc {id:3, proc_id:ProcID:8, kind:ProcKind:4, uuid_size:uuid_size:4, cuda_device_uuid:uuid:1}\n"
            "TaskKind {id:4, task_id:TaskID:4, name:string:-1, overwrite:bool:1}\n"
            "TaskInfo {id:5, op_id:UniqueID:8, task_id:TaskID:4, variant_id:VariantID:4, proc_id:ProcID:8, "
            "create:timestamp_t:8, ready:timestamp_t:8, start:timestamp_t:8, stop:timestamp_t:8, "
            "creator:unsigned long long:8, critical:unsigned long long:8, fevent:unsigned long long:8}\n"
            "TaskWaitInfo {id:6, op_id:UniqueID:8, task_id:TaskID:4, variant_id:VariantID:4, "
            "wait_start:timestamp_t:8, wait_ready:timestamp_t:8, wait_end:timestamp_t:8, "
            "wait_event:unsigned long long:8}\n"
            "CopyInfo {id:7, op_id:UniqueID:8, size:unsigned long long:8, create:timestamp_t:8, "
            "ready:timestamp_t:8, start:timestamp_t:8, stop:timestamp_t:8, creator:unsigned long long:8, "
            "critical:unsigned long long:8, fevent:unsigned long long:8, collective:unsigned:4}\n"
            "MapperCallInfo {id:8, mapper_id:MapperID:4, mapper_proc:ProcID:8, kind:MappingCallKind:4, "
            "op_id:UniqueID:8, start:timestamp_t:8, stop:timestamp_t:8, proc_id:ProcID:8, "
            "fevent:unsigned long long:8}\n"
            "IndexSpacePointDesc {id:9, unique_id:IDType:8, dim:unsigned:4, rem:point:8}\n"
            "MetaInfo {id:10, op_id:UniqueID:8, lg_id:unsigned:4, proc_id:ProcID:8, create:timestamp_t:8, "
            "ready:timestamp_t:8, start:timestamp_t:8, stop:timestamp_t:8, creator:unsigned long long:8, "
            "critical:unsigned long long:8, fevent:unsigned long long:8}\n"
            "\n";
  }
  template <typename T> void put(T v) { text_.append(reinterpret_cast<const char *>(&v), sizeof(v)); }
  void str(const std::string &s) { text_.append(s.c_str(), s.size() + 1); }
  void machine(uint32_t node) {
    put<int32_t>(1);
    put<uint32_t>(node), put<uint32_t>(1), put<uint32_t>(1), str("host"), put<uint64_t>(7), put<uint32_t>(42);
  }
  void maxDim(int32_t d) { put<int32_t>(2), put<int32_t>(d); }
  void proc(uint64_t id, int32_t kind, uint32_t uuidBytes = 0) {
    put<int32_t>(3), put<uint64_t>(id), put<int32_t>(kind), put<uint32_t>(uuidBytes);
    for (uint32_t i = 0; i < uuidBytes; ++i)
      put<int8_t>(static_cast<int8_t>(i));
  }
  void taskKind(uint32_t id, const std::string &name) {
    put<int32_t>(4), put<uint32_t>(id), str(name), put<bool>(false);
  }
  void task(uint64_t op, uint32_t task, uint64_t proc, uint64_t ready, uint64_t start, uint64_t stop) {
    put<int32_t>(5), put<uint64_t>(op), put<uint32_t>(task), put<uint32_t>(1), put<uint64_t>(proc);
    put<uint64_t>(ready), put<uint64_t>(ready), put<uint64_t>(start), put<uint64_t>(stop);
    put<uint64_t>(0), put<uint64_t>(0), put<uint64_t>(0);
  }
  void wait(uint64_t op, uint64_t s, uint64_t e) {
    put<int32_t>(6), put<uint64_t>(op), put<uint32_t>(0), put<uint32_t>(0);
    put<uint64_t>(s), put<uint64_t>(s), put<uint64_t>(e), put<uint64_t>(0);
  }
  void copy(uint64_t bytes, uint64_t s, uint64_t e) {
    put<int32_t>(7), put<uint64_t>(99), put<uint64_t>(bytes), put<uint64_t>(s), put<uint64_t>(s);
    put<uint64_t>(s), put<uint64_t>(e), put<uint64_t>(0), put<uint64_t>(0), put<uint64_t>(0), put<uint32_t>(0);
  }
  void mapperCall(uint64_t s, uint64_t e) {
    put<int32_t>(8), put<uint32_t>(0), put<uint64_t>(1), put<int32_t>(3), put<uint64_t>(5);
    put<uint64_t>(s), put<uint64_t>(e), put<uint64_t>(1), put<uint64_t>(0);
  }
  void point(int dims) { // a record whose size depends on MaxDimDesc
    put<int32_t>(9), put<uint64_t>(3), put<uint32_t>(static_cast<uint32_t>(dims));
    for (int i = 0; i < dims; ++i)
      put<uint64_t>(static_cast<uint64_t>(i));
  }
  const std::string &bytes() const { return text_; }

private:
  std::string text_;
};

class ProfLogTest : public ::testing::Test {
protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("hone-prof-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string write(const std::string &name, const std::string &bytes, bool gzip) {
    std::string path = (dir_ / name).string();
    if (gzip) {
      gzFile f = gzopen(path.c_str(), "wb");
      gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
      gzclose(f);
    } else {
      FILE *f = std::fopen(path.c_str(), "wb");
      std::fwrite(bytes.data(), 1, bytes.size(), f);
      std::fclose(f);
    }
    return path;
  }
  /// Two CPUs and a utility processor; `work` runs 3 points on CPU 0x1d..01 and 1 on ..02,
  /// `inner` waits for most of its life; one copy, one mapper call.
  LogWriter twoCpus() {
    LogWriter w;
    w.machine(0);
    w.maxDim(3);
    w.proc(0x1d00000000000002ull, 2, 16);
    w.proc(0x1d00000000000001ull, 2);
    w.proc(0x1d00000000000003ull, 3);
    w.taskKind(10, "work");
    w.taskKind(11, "inner");
    w.point(3);
    const uint64_t ms = 1000000; // timestamps are nanoseconds
    w.task(1, 10, 0x1d00000000000001ull, 0, 0, 10 * ms);
    w.task(2, 10, 0x1d00000000000001ull, 0, 10 * ms, 20 * ms);
    w.task(3, 10, 0x1d00000000000001ull, 0, 20 * ms, 30 * ms);
    w.task(4, 10, 0x1d00000000000002ull, 5 * ms, 15 * ms, 20 * ms); // waited 10 ms for its processor
    w.task(5, 11, 0x1d00000000000002ull, 0, 0, 40 * ms);
    w.wait(5, 1 * ms, 39 * ms); // blocked on children: 2 ms of real work
    w.copy(4096, 30 * ms, 34 * ms);
    w.mapperCall(0, 2 * ms);
    return w;
  }
  std::filesystem::path dir_;
};

TEST_F(ProfLogTest, AggregatesTasksProcessorsCopiesAndOverheads) {
  for (bool gzip : {true, false}) {
    std::string path = write(gzip ? "p_0.gz" : "p_0.log", twoCpus().bytes(), gzip);
    std::vector<std::string> warnings;
    auto p = readLegionProfile({path}, &warnings);
    ASSERT_TRUE(p.ok()) << p.error().message;
    EXPECT_TRUE(warnings.empty());
    EXPECT_NEAR(p->spanS, 0.040, 1e-12);
    ASSERT_EQ(p->tasks.size(), 2u);
    EXPECT_EQ(p->tasks[0].name, "work"); // busiest first
    EXPECT_EQ(p->tasks[0].points, 4);
    EXPECT_NEAR(p->tasks[0].busyS, 0.035, 1e-12);
    EXPECT_NEAR(p->tasks[0].waitS, 0.010, 1e-12);
    EXPECT_EQ(p->tasks[0].kind, "CPU");
    EXPECT_NEAR(p->tasks[1].busyS, 0.002, 1e-12); // the inner task's waits are not work
    // Processors numbered by id within their kind: 0x..01 is CPU 0, 0x..02 is CPU 1.
    ASSERT_EQ(p->processors.size(), 3u);
    EXPECT_EQ(p->processors[0].kind, "CPU");
    EXPECT_EQ(p->processors[0].index, 0);
    EXPECT_EQ(p->processors[0].tasks, 3);
    EXPECT_NEAR(p->processors[0].busyFraction, 0.75, 1e-9);
    EXPECT_EQ(p->processors[1].index, 1);
    EXPECT_EQ(p->processors[2].kind, "UTIL");
    EXPECT_EQ(p->copies, 1);
    EXPECT_DOUBLE_EQ(p->bytesCopied, 4096);
    EXPECT_NEAR(p->copyBusyS, 0.004, 1e-12);
    EXPECT_NEAR(p->mapperS, 0.002, 1e-12);
    EXPECT_EQ(p->skipped, 1); // the point record: read (its size follows MaxDimDesc), not used
  }
}

TEST_F(ProfLogTest, TheProfileHasTheSimulatorsFormAndBottlenecks) {
  auto p = readLegionProfile({write("p_0.gz", twoCpus().bytes(), true)});
  ASSERT_TRUE(p.ok()) << p.error().message;
  auto j = toProfileJson(*p);
  EXPECT_EQ(j["status"], "ok");
  EXPECT_EQ(j["task_stats"][0]["name"], "work");
  EXPECT_EQ(j["processors"][0]["name"], "CPU (0,0)");
  // CPU 0 is busy 75% of the span, CPU 1 17.5%: the simulator's imbalance rule fires.
  bool imbalance = false;
  for (const auto &b : j["bottlenecks"])
    imbalance = imbalance || (b["kind"] == "processor" && b["resource"] == "CPU (0,0)");
  EXPECT_TRUE(imbalance) << j["bottlenecks"].dump();
}

TEST_F(ProfLogTest, ALogCutShortGivesWhatCameBefore) {
  std::string bytes = twoCpus().bytes();
  auto p = readLegionProfile({write("cut.gz", bytes.substr(0, bytes.size() - 20), true)}, nullptr);
  ASSERT_TRUE(p.ok());
  std::vector<std::string> warnings;
  auto q = readLegionProfile({write("cut2.gz", bytes.substr(0, bytes.size() - 20), true)}, &warnings);
  ASSERT_TRUE(q.ok());
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("cut short"), std::string::npos) << warnings[0];
  EXPECT_EQ(q->copies, 1);  // before the cut
  EXPECT_EQ(q->mapperS, 0); // the cut record
}

TEST_F(ProfLogTest, RecordTypesWithOtherFieldsAreReadByTheirPreamble) {
  // An older or newer Legion: TaskKind without 'overwrite', TaskInfo with a field hone does not know,
  // in another order. Fields are found by name, so the numbers are still right.
  std::string log = "FileType: BinaryLegionProf v: 1.0\n"
                    "TaskKind {id:1, task_id:TaskID:4, name:string:-1}\n"
                    "TaskInfo {id:2, extra:unsigned:4, task_id:TaskID:4, op_id:UniqueID:8, proc_id:ProcID:8, "
                    "start:timestamp_t:8, stop:timestamp_t:8}\n"
                    "\n";
  auto put = [&](auto v) { log.append(reinterpret_cast<const char *>(&v), sizeof(v)); };
  for (uint32_t k : {7u, 7u}) { // the same kind twice: the first name stays
    put(int32_t(1)), put(k);
    log += k == 7 && log.find("leaf") == std::string::npos ? std::string("leaf") : std::string("other");
    log += '\0';
  }
  put(int32_t(2)), put(uint32_t(99)), put(uint32_t(7)), put(uint64_t(1)), put(uint64_t(5)), put(uint64_t(1000)),
      put(uint64_t(3000));
  auto p = readLegionProfile({write("older.log", log, false)});
  ASSERT_TRUE(p.ok()) << p.error().message;
  ASSERT_EQ(p->tasks.size(), 1u);
  EXPECT_EQ(p->tasks[0].name, "leaf");
  EXPECT_NEAR(p->tasks[0].busyS, 2e-6, 1e-15);
}

TEST_F(ProfLogTest, NamesSizesAndTimeAreBounded) {
  // A name of 5,000 characters keeps its first ones; logs larger than the limit, or slower to read
  // than it, are refused with where the reader stopped.
  LogWriter w = twoCpus();
  w.taskKind(12, std::string(5000, 'n'));
  w.task(6, 12, 0x1d00000000000001ull, 0, 30000000, 31000000);
  std::string path = write("big.gz", w.bytes(), true);
  hone::legion::ProfLogLimits small;
  small.nameChars = 16;
  auto cut = readLegionProfile({path}, nullptr, small);
  ASSERT_TRUE(cut.ok()) << cut.error().message;
  bool seen = false;
  for (const auto &t : cut->tasks)
    if (t.name.rfind("nnnn", 0) == 0) {
      seen = true;
      EXPECT_EQ(t.name, std::string(16, 'n') + " ...");
    }
  EXPECT_TRUE(seen);
  hone::legion::ProfLogLimits bytes;
  bytes.uncompressedBytes = 100;
  auto large = readLegionProfile({path}, nullptr, bytes);
  ASSERT_FALSE(large.ok());
  EXPECT_NE(large.error().message.find("more than 100 bytes uncompressed"), std::string::npos) << large.error().message;
  EXPECT_NE(large.error().message.find("big.gz: at byte"), std::string::npos) << large.error().message;
  hone::legion::ProfLogLimits slow;
  slow.seconds = -1; // already past
  auto late = readLegionProfile({path}, nullptr, slow);
  ASSERT_FALSE(late.ok());
  EXPECT_NE(late.error().message.find("took longer than"), std::string::npos) << late.error().message;
  EXPECT_TRUE(readLegionProfile({path}).ok()); // the defaults read it whole
}

TEST_F(ProfLogTest, MalformedLogsAreLocatedErrors) {
  auto notProf = readLegionProfile({write("x.log", "Realm log line\nmore\n", false)});
  ASSERT_FALSE(notProf.ok());
  EXPECT_NE(notProf.error().message.find("not a Legion Prof binary log"), std::string::npos);
  EXPECT_NE(notProf.error().message.find("x.log: at byte 0"), std::string::npos) << notProf.error().message;

  LogWriter w;
  w.put<int32_t>(77); // a record type the preamble does not declare
  auto undeclared = readLegionProfile({write("u.gz", w.bytes(), true)});
  ASSERT_FALSE(undeclared.ok());
  EXPECT_NE(undeclared.error().message.find("type 77"), std::string::npos) << undeclared.error().message;

  auto badPreamble =
      readLegionProfile({write("b.gz", "FileType: BinaryLegionProf v: 1.0\nTaskInfo {id:x, a:b:8}\n\n", true)});
  ASSERT_FALSE(badPreamble.ok());
  EXPECT_NE(badPreamble.error().message.find("at byte 34"), std::string::npos) << badPreamble.error().message;

  auto noEnd = readLegionProfile(
      {write("n.gz", "FileType: BinaryLegionProf v: 1.0\nMaxDimDesc {id:2, max_dim:maxdim:4}\n", true)});
  ASSERT_FALSE(noEnd.ok());
  EXPECT_NE(noEnd.error().message.find("does not end"), std::string::npos);

  LogWriter dims;
  dims.maxDim(1000); // would make point records 8 KB each
  auto huge = readLegionProfile({write("d.gz", dims.bytes(), true)});
  ASSERT_FALSE(huge.ok());
  EXPECT_NE(huge.error().message.find("not a number of dimensions"), std::string::npos);

  EXPECT_FALSE(readLegionProfile({(dir_ / "missing.gz").string()}).ok());
  // A folder (its name with a space and $(...)) or a device where a log should be: located errors.
  std::filesystem::create_directories(dir_ / "a $(b)");
  auto folder = readLegionProfile({(dir_ / "a $(b)").string()});
  ASSERT_FALSE(folder.ok());
  EXPECT_NE(folder.error().message.find("a $(b)"), std::string::npos) << folder.error().message;
  auto device = readLegionProfile({"/dev/zero"}); // endless: the first line alone is read, and refused
  ASSERT_FALSE(device.ok());
  EXPECT_NE(device.error().message.find("not a Legion Prof binary log"), std::string::npos);
  EXPECT_FALSE(readLegionProfile({}).ok());
}

} // namespace
