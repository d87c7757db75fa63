// Test-only declarations: Legion's DefaultMapper as hone's generated mappers
// use it (see ../legion.h).
#ifndef HONE_TEST_DEFAULT_MAPPER_DECL_H
#define HONE_TEST_DEFAULT_MAPPER_DECL_H

#include "legion.h"

namespace Legion {
namespace Mapping {

class DefaultMapper : public Mapper {
public:
  DefaultMapper(MapperRuntime *rt, Machine machine, Processor local, const char *mapper_name = NULL,
                bool own_name = false);
  virtual ~DefaultMapper(void);
  MapperSyncModel get_mapper_sync_model(void) const override;
  void select_task_options(const MapperContext ctx, const Task &task, TaskOptions &output) override;
  void slice_task(const MapperContext ctx, const Task &task, const SliceTaskInput &input,
                  SliceTaskOutput &output) override;
  void map_task(const MapperContext ctx, const Task &task, const MapTaskInput &input, MapTaskOutput &output) override;
  void select_sharding_functor(const MapperContext ctx, const Task &task, const SelectShardingFunctorInput &input,
                               SelectShardingFunctorOutput &output) override;
  // One of the other overloads, so that hiding them would be noticed.
  virtual void select_sharding_functor(const MapperContext ctx, const LogicalRegion &copy,
                                       const SelectShardingFunctorInput &input, SelectShardingFunctorOutput &output);
  void select_tasks_to_map(const MapperContext ctx, const SelectMappingInput &input,
                           SelectMappingOutput &output) override;
  void report_profiling(const MapperContext ctx, const Task &task, const TaskProfilingInfo &input) override;
  virtual void report_profiling(const MapperContext ctx, const LogicalRegion &copy, const CopyProfilingInfo &input);

  virtual Processor default_policy_select_initial_processor(MapperContext ctx, const Task &task);
  virtual void default_policy_select_target_processors(MapperContext ctx, const Task &task,
                                                       std::vector<Processor> &target_procs);
  virtual Memory default_policy_select_target_memory(MapperContext ctx, Processor target_proc,
                                                     const RegionRequirement &req,
                                                     MemoryConstraint mc = MemoryConstraint());
  virtual void default_policy_select_constraints(MapperContext ctx, LayoutConstraintSet &constraints,
                                                 Memory target_memory, const RegionRequirement &req);

protected:
  const Machine machine;
  const AddressSpace node_id;
};

} // namespace Mapping
} // namespace Legion

#endif
