// Fuzzes moe-train's recipe arguments (lib/config/recipe_args.cpp): the input, split at newlines, is the
// argument list (--key value, --key=value, --config FILE, positional words), parsed, loaded over the
// defaults and read into TrainOptions. Invariant: bad input is a moe::Error with a message, never another
// exception or a crash. Seeds: tests/fuzz/seeds/overrides.
#include "config/recipe_args.h"
#include "fuzz_support.h"
#include "training/train_options.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static moe::config::Schema schema = [] {
    moe::config::Schema s;
    moe::register_train_keys(s);
    return s;
  }();
  const auto args = moe::fuzz::split(std::string_view(reinterpret_cast<const char*>(data), size), '\n');
  moe::fuzz::accepts(
      [&] {
        const moe::config::CommandLine cmd = moe::config::parse_command_line(schema, args);
        moe::config::Config config = moe::config::load_config(schema, cmd);
        moe::settle_model_keys(config);
        (void)moe::TrainOptions::from_config(config);
      },
      "");
  return 0;
}
