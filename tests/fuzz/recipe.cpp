// Fuzzes a YAML recipe as moe-train reads it (lib/config, lib/training/train_options.cpp): the text is
// merged into the training schema, the model keys settled, every option read and checked
// (TrainOptions::from_config). Invariants: bad input is a moe::Error naming the recipe or key; an
// accepted recipe's --dump-config text loads back to the same dump. Seeds: tests/fuzz/seeds/recipe.
#include <algorithm>

#include "config/config.h"
#include "fuzz_support.h"
#include "training/train_options.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static moe::config::Schema schema = [] {
    moe::config::Schema s;
    moe::register_train_keys(s);
    return s;
  }();
  const std::string text(reinterpret_cast<const char*>(data), size);
  moe::config::Config config(schema);
  if (!moe::fuzz::accepts([&] { config.merge_text(text, "fuzz.yml", moe::fuzz::scratch_dir()); }, "fuzz.yml")) return 0;
  moe::fuzz::accepts(
      [&] {
        moe::settle_model_keys(config);
        const std::string dump = moe::config::dump_config(config);
        moe::config::Config back(schema);
        back.merge_text(dump, "dump.yml");
        moe::settle_model_keys(back);
        const std::string again = moe::config::dump_config(back);
        FUZZ_REQUIRE(again == dump,
                     "the dumped recipe does not load back: first difference at byte " +
                         std::to_string(std::mismatch(dump.begin(), dump.end(), again.begin(), again.end()).first -
                                        dump.begin()) +
                         " of\n" + dump + "\nloaded back and dumped:\n" + again);
        (void)moe::TrainOptions::from_config(config);
      },
      "");
  return 0;
}
