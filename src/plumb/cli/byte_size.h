// Byte sizes as users type and read them: "--memory-limit 8GiB" in, "1.25 GiB" out.
#pragma once

#include <cstdint>
#include <string>

#include "plumb/report/text_table.h"

namespace plumb::cli {

// "8GiB", "512 MiB", "1.5GB", "4096" (bytes); binary (KiB, MiB, GiB, TiB) and decimal (kB, MB,
// GB, TB) units, case-insensitive, optional space, a bare "K/M/G/T" is binary. Throws
// UsageError naming `option` for anything else, zero, negative or absurd (> 2^62) sizes.
int64_t parse_byte_size(const std::string& option, const std::string& text);

// "512 B", "12.0 KiB", "456.7 MiB", "1.25 GiB" (report/text_table.h, beside the other formats).
using report::format_bytes;

}  // namespace plumb::cli
