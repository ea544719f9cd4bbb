// Embeds the minified chart libraries into the binary with the assembler's .incbin (paths
// and versions come from CMakeLists.txt, which also makes this file rebuild when they
// change). .incbin keeps the build fast: a 0.8 MB string literal or a generated hex array
// would cost seconds of compile time and a large generated source on every change.
#include "plumb/report/chart_library.h"

#include <cstddef>

#define PLUMB_EMBED(symbol, path)         \
  __asm__(                                \
      ".pushsection .rodata\n"            \
      ".global " #symbol                  \
      "_begin\n"                          \
      ".global " #symbol "_end\n" #symbol \
      "_begin:\n"                         \
      ".incbin \"" path "\"\n" #symbol    \
      "_end:\n"                           \
      ".popsection\n")

PLUMB_EMBED(plumb_vega_js, PLUMB_VEGA_JS);
PLUMB_EMBED(plumb_vega_lite_js, PLUMB_VEGA_LITE_JS);
PLUMB_EMBED(plumb_vega_embed_js, PLUMB_VEGA_EMBED_JS);
PLUMB_EMBED(plumb_sortable_js, PLUMB_SORTABLE_JS);
PLUMB_EMBED(plumb_sortable_css, PLUMB_SORTABLE_CSS);

extern "C" {
extern const char plumb_vega_js_begin[], plumb_vega_js_end[];
extern const char plumb_vega_lite_js_begin[], plumb_vega_lite_js_end[];
extern const char plumb_vega_embed_js_begin[], plumb_vega_embed_js_end[];
extern const char plumb_sortable_js_begin[], plumb_sortable_js_end[];
extern const char plumb_sortable_css_begin[], plumb_sortable_css_end[];
}

namespace plumb::report {
namespace {

std::string_view between(const char* begin, const char* end) {
  return std::string_view(begin, static_cast<size_t>(end - begin));
}

}  // namespace

const ChartLibrary& chart_library() {
  static const ChartLibrary library{between(plumb_vega_js_begin, plumb_vega_js_end),
                                    between(plumb_vega_lite_js_begin, plumb_vega_lite_js_end),
                                    between(plumb_vega_embed_js_begin, plumb_vega_embed_js_end),
                                    between(plumb_sortable_js_begin, plumb_sortable_js_end),
                                    between(plumb_sortable_css_begin, plumb_sortable_css_end),
                                    PLUMB_CHART_VERSIONS};
  return library;
}

}  // namespace plumb::report
