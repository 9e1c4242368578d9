// The built-in attention and feed-forward families, one registration line each. A new family adds its
// own files (options, layer, a *_site.cpp defining its family) and one line here.
// Covered by tests/layers/sites_test.cpp.
#include "layers/sites.h"

namespace moe {

void register_builtin_sites(SiteRegistry& r) {
  r.add(mha_family());
  r.add(mae_family());
  r.add(moa_family());
  r.add(dense_ffn_family());
  r.add(moe_ffn_family());
}

}  // namespace moe
