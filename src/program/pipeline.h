// Building the host program of a schedule: the passes in order (pipeline.cpp lists them in one
// function), each logged when the log topics name `program`.
#pragma once

#include "kernel/pipeline.h"
#include "program/host_program.h"
#include "program/log_topics.h"

namespace stax::program {

HostProgram build_host_program(const scheduler::Schedule& schedule,
                               const kernel::PipelineOptions& kernel_options,
                               const MemoryOptions& memory = {}, const LogTopics& logs = {});

// The passes (one file each).
// Each fused node in execution order becomes a step: loop nests through the kernel pipeline,
// external calls as sites the runtime builds plans for.
void lower_steps(HostProgram& program, const kernel::PipelineOptions& kernel_options);
// Adjacent loop steps share a kernel function (and parallel region) where that raises no peak.
void group_kernel_functions(HostProgram& program);
// The wrapper's statements: allocations before a buffer's producer, calls, and releases after
// each buffer's last use (the schedule's records, Section 7.5), with their slots.
void place_buffers(HostProgram& program);
// Every intermediate at a fixed offset of one arena (arena_layout.h), instead of its own
// allocation and release.
void plan_arena(HostProgram& program);
// Without the arena: Section 7.5's free pool, an allocation taking a released buffer of the
// same dtype and size where that raises no peak.
void reuse_buffers(HostProgram& program);

// A readable dump of the program after a pass (the log topic `program`).
std::string describe_program(const HostProgram& program);

}  // namespace stax::program
