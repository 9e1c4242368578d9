// Unicode helpers for the metrics: general-category membership (P*, S*, N*) from generated range
// tables (unicode_tables.cpp), used by the intl tokenizer as \p{P}, \p{S}, \p{N}.
// Covered by tests/metrics/tokenizer_test.cpp.
#pragma once
#include <cstddef>

namespace moe::metrics {

struct CodeRange {
  char32_t first;
  char32_t last;
};

bool is_unicode_punct(char32_t c);   // general category P*
bool is_unicode_symbol(char32_t c);  // general category S*
bool is_unicode_number(char32_t c);  // general category N*

}  // namespace moe::metrics
