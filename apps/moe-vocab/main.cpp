// moe-vocab: `moe-vocab build -i TEXT -o VOCAB [-t bpe|unigram|word]`, `moe-vocab encode`, `moe-vocab
// lex`, `moe-vocab bench` (vocab_commands.cpp). Covered by tests/data/prep_test.cpp and data-prep/*.sh.
#include <iostream>

#include "cli/program.h"
#include "moe-vocab/vocab_program.h"

int main(int argc, char** argv) {
  return moe::cli::run_program("moe-vocab", argc, argv, [](int n, char** v) {
    return moe::vocab_table().run(std::vector<std::string>(v, v + n), std::cout, std::cerr);
  });
}
