// The device-to-host copies and host waits the CUDA emulator counted since `before` (moe_emu::host_traffic),
// for the tests that a step runs without either (tests/emu/moe_no_sync_test.cpp,
// tests/emu/optimizer_no_sync_test.cpp).
#pragma once
#include <cstdint>

#include "moe_emu/control.h"

namespace moe::test {

struct Traffic {
  uint64_t copies, waits;
};
inline Traffic traffic_since(const moe_emu::HostTraffic& before) {
  const moe_emu::HostTraffic now = moe_emu::host_traffic();
  return {now.copies_to_host - before.copies_to_host, now.host_waits - before.host_waits};
}

}  // namespace moe::test
