// What every moe program shares at its start: libgomp's spin policy and OpenBLAS's kernel set
// (rerun_with_runtime_env, before anything else), the --cpu-threads option on its CLI11 parser, and a top-level error
// handler that prints "<program>: <message>" and returns 1 instead of terminating. Covered by
// tests/unit/cpu_threads_test.cpp and the programs' tests (tests/translator/translate_cli_test.cpp).
#pragma once
#include <functional>
#include <string>

namespace CLI {
class App;
}

namespace moe::cli {

/// Adds --cpu-threads N (threads of CPU ops; 0 or absent: the physical cores) to `app`, applied when
/// parsed. Subcommands see it with fallthrough.
void add_cpu_threads_option(CLI::App& app);

/// main() of a program: sets libgomp's spin policy (may re-execute the program) and the default thread count
/// (an error under an address-space limit below 512 MiB), then runs `body`; an exception escaping it is
/// printed as "<program>: <what>" on stderr (std::bad_alloc with the memory limits found) and gives status 1.
int run_program(const char* program, int argc, char** argv, const std::function<int(int, char**)>& body);

}  // namespace moe::cli
