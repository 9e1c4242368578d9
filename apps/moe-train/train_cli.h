// The moe-train command line on CLI11: its own flags (--resume, --dump-config, --cpu-threads, --help)
// and the recipe arguments it hands to the config layer (--config FILE ..., --section.key value ...;
// config/recipe_args.h). --help lists every recipe key with its type, default and help (the key
// tables of training/train_options.h and the model registry). Covered by tests/scripts/e2e_translation.sh
// and tests/training/train_options_test.cpp.
#pragma once
#include <iosfwd>
#include <string>
#include <vector>

namespace moe {

/// main() of moe-train after the shared start (cli/program.h): parses, trains (or dumps the merged
/// configuration); returns the exit status. Errors are logged as "moe-train: ..." and give 1.
int train_main(int argc, char** argv);

}  // namespace moe
