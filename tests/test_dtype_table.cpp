// The dtype table (core/dtype.h): every dtype has every column, names and element types parse back
// to the enum, and the lists read from it (run precisions, the probe's peak dtypes) agree with it.
#include <set>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "plumb/core/dtype.h"
#include "plumb/core/errors.h"
#include "usage_error_check.h"

namespace plumb {
namespace {

TEST(DtypeTable, EveryDtypeHasEveryColumn) {
  std::set<std::string> names;
  for (const DtypeInfo& row : dtype_table()) {
    SCOPED_TRACE(row.name);
    EXPECT_NE(std::string(row.name), "");
    EXPECT_TRUE(names.insert(row.name).second) << "two rows named " << row.name;
    ASSERT_FALSE(row.scalar_types.empty());
    EXPECT_GT(row.element_bytes, 0);
    // The size is the usual element type's: what a tensor of it really holds.
    EXPECT_EQ(row.element_bytes, static_cast<int>(c10::elementSize(row.scalar_types.front())));
    EXPECT_EQ(row.floating, c10::isFloatingType(row.scalar_types.front()));
    EXPECT_EQ(&dtype_info(row.dtype), &row);
  }
  // Every enumerator has a row.
  for (Dtype d : {Dtype::kFp32, Dtype::kBf16, Dtype::kFp16, Dtype::kInt8, Dtype::kFp64})
    EXPECT_EQ(dtype_info(d).dtype, d);
  EXPECT_EQ(dtype_table().size(), 5u);
}

TEST(DtypeTable, NamesAndElementTypesParseBackToTheEnum) {
  for (const DtypeInfo& row : dtype_table()) {
    EXPECT_EQ(dtype_from_name(row.name), row.dtype);
    EXPECT_STREQ(dtype_name(row.dtype), row.name);
    for (c10::ScalarType scalar : row.scalar_types)
      EXPECT_EQ(dtype_of_scalar_type(scalar), row.dtype);
  }
  EXPECT_EQ(dtype_from_name("fp8"), std::nullopt);
  EXPECT_EQ(dtype_of_scalar_type(c10::ScalarType::Long), std::nullopt);
  EXPECT_EQ(dtype_of_scalar_type(c10::ScalarType::QUInt8), Dtype::kInt8);
}

TEST(DtypeTable, RunsTakeTheRunPrecisionsOnly) {
  std::vector<Dtype> expected;
  for (const DtypeInfo& row : dtype_table())
    if (row.run_precision) expected.push_back(row.dtype);
  EXPECT_EQ(all_dtypes(), expected);
  EXPECT_EQ(all_dtypes().size(), 4u);
  EXPECT_EQ(parse_dtype("bf16"), Dtype::kBf16);
  // fp64 has a row (the probe measures its peaks) but is no run precision.
  EXPECT_THROW(parse_dtype("fp64"), UsageError);
  expect_usage_error([] { parse_dtype("fp8"); }, {"valid: fp32, bf16, fp16, int8"});
  EXPECT_EQ(parse_dtype_list("int8,fp32"), (std::vector<Dtype>{Dtype::kInt8, Dtype::kFp32}));
  EXPECT_THROW(parse_dtype_list("int8,int8"), UsageError);
}

// In JSON (stored documents, --json) a dtype is its name, and a name reads back to the enum.
TEST(DtypeTable, JsonHoldsTheName) {
  for (const DtypeInfo& row : dtype_table()) {
    const nlohmann::ordered_json j = row.dtype;
    EXPECT_EQ(j, row.name);
    EXPECT_EQ(j.get<Dtype>(), row.dtype);
  }
  EXPECT_THROW(nlohmann::json("fp8").get<Dtype>(), std::invalid_argument);
}

}  // namespace
}  // namespace plumb
