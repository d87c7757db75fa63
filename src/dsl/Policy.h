// Which statement of a policy applies to a task or region argument, with the
// same precedence as the compiled mapper's rule lookups
// (src/legion/runtime/hone_mapper_support.h) and the DSL runtime:
// - Task, IndexTaskMap, SingleTaskMap: a statement naming the task beats one
//   naming its processor kind (maps only), which beats '*'; the first wins
//   among equals, as in the reference implementation (DSLMapper).
// - Region, Layout: the most specific statement wins (named task 4, named or
//   indexed region 2, specific processor / memory 1); the first among equals.
// - InstanceLimit: the first statement naming the task (and its kind, if given).
// - CollectMemory, ControlReplicate: any statement naming the task (or '*').
#pragma once

#include "dsl/Ast.h"

#include <optional>
#include <string>

namespace hone::dsl {

/// A region argument as a policy names it: by name, or by 0-based position.
struct RegionArgRef {
  const std::string &name;
  int index;
};

const TaskStmt *taskStatementFor(const Program &program, const std::string &task);
const TaskMapStmt *taskMapStatementFor(const Program &program, const std::string &task, ProcKind kind, bool single);
const RegionStmt *regionStatementFor(const Program &program, const std::string &task, RegionArgRef region,
                                     ProcKind proc);
const LayoutStmt *layoutStatementFor(const Program &program, const std::string &task, RegionArgRef region,
                                     MemKind mem, ProcKind proc);
std::optional<int64_t> instanceLimitFor(const Program &program, const std::string &task, ProcKind proc);
bool collectsMemory(const Program &program, const std::string &task, RegionArgRef region);
bool controlReplicated(const Program &program, const std::string &task);

} // namespace hone::dsl
