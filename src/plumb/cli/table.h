// The command line's text tables and number formats: report/text_table.h, under the names the
// commands have always used (the tables live below jobs/ so that jobs' text reporters share them).
#pragma once

#include "plumb/report/text_table.h"

namespace plumb::cli {

using Table = report::TextTable;
using report::format_count;
using report::format_duration;
using report::format_number;
using report::format_percent;
using report::format_seconds;

}  // namespace plumb::cli
