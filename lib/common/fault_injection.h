// Fault injection for the tests of what a failed write leaves behind: MOE_FAULT_INJECT=write:N[:ERR]
// makes the N-th file (counted from 1 in this process) written through the atomic write layer
// (atomic_file.h: checkpoints, training states, the dumped configuration) fail as a full disk (ERR = ENOSPC, the
// default) or an I/O error (EIO) would: its temporary file is written, then the write reports the error.
// The variable is read once; a malformed value is an error naming it. Unset, nothing changes.
// Covered by tests/unit/fault_injection_test.cpp and tests/scripts/disk_faults.sh.
#pragma once
#include <cstdint>
#include <string>

namespace moe {

struct WriteFault {
  int64_t file = 0;  // the file that fails, counted from 1 (0: none)
  int error = 0;     // its errno
};

/// Parses a MOE_FAULT_INJECT value ("write:3", "write:2:EIO"); errors name the variable and the value.
WriteFault parse_fault_injection(const std::string& value);

/// Counts one more file written through the atomic write layer and returns the errno it must fail with
/// (0: none), from MOE_FAULT_INJECT.
int next_file_write_fault(const std::string& path);

}  // namespace moe
