// Tests of the tensor helpers: random tensors, JSON round trips (NaN/inf, bool, exact int64),
// tensor_from_json error messages, compare()'s allclose semantics, broadcast (stride-0) tensors
// costing their distinct elements only, and JSON files (bounded nesting, errors naming the
// file, failed writes).
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "eager/json_file.h"
#include "eager/tensor_io.h"
#include "eager_test_util.h"

namespace stax::eager {
namespace {

using nlohmann::json;
using testing::int64_values;
using testing::make;
using testing::values;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(RandomTensor, DeterministicAndInRange) {
  Tensor a = random_tensor(DType::Float32, {4, 5}, 42);
  Tensor b = random_tensor(DType::Float32, {4, 5}, 42);
  Tensor c = random_tensor(DType::Float32, {4, 5}, 43);
  EXPECT_TRUE(a.is_contiguous());
  EXPECT_EQ(values(a), values(b));
  EXPECT_NE(values(a), values(c));
  for (double v : values(a)) {
    EXPECT_GE(v, -1.0);
    EXPECT_LE(v, 1.0);
  }
  for (double v : values(random_tensor(DType::Int32, {100}, 1))) {
    EXPECT_GE(v, -10);
    EXPECT_LE(v, 10);
    EXPECT_EQ(v, std::trunc(v));
  }
  for (double v : values(random_tensor(DType::UInt8, {100}, 1))) EXPECT_LE(v, 20);
  bool seen[2] = {false, false};
  for (double v : values(random_tensor(DType::Bool, {100}, 1))) seen[v != 0] = true;
  EXPECT_TRUE(seen[0] && seen[1]);
}

TEST(RandomTensor, StridedHasSameLogicalValues) {
  Tensor a = random_tensor(DType::Float16, {3, 4}, 7);
  Tensor s = random_tensor_strided(DType::Float16, {3, 4}, {1, 3}, 7);
  EXPECT_EQ(s.strides(), (std::vector<int64_t>{1, 3}));
  EXPECT_FALSE(s.is_contiguous());
  EXPECT_EQ(values(a), values(s));
}

TEST(TensorJson, NestedListsWithSpecialValues) {
  Tensor t = make(DType::Float32, {2, 3}, {1.5, kNaN, kInf, -kInf, 0, -2});
  json j = tensor_to_json(t);
  EXPECT_EQ(j.dump(), R"([[1.5,"nan","inf"],["-inf",0.0,-2.0]])");
  Tensor back = tensor_from_json(j, DType::Float32, {2, 3}, "t");
  EXPECT_TRUE(compare(back, t, 0, 0).within_tolerance);
  EXPECT_TRUE(std::isnan(back.get({0, 1})));
  EXPECT_EQ(back.get({1, 0}), -kInf);
}

TEST(TensorJson, RoundTripsExactly) {
  Tensor f = random_tensor(DType::Float32, {3, 5}, 3);
  EXPECT_EQ(values(tensor_from_json(tensor_to_json(f), DType::Float32, {3, 5}, "f")), values(f));
  Tensor h = random_tensor(DType::BFloat16, {4}, 3);
  EXPECT_EQ(values(tensor_from_json(tensor_to_json(h), DType::BFloat16, {4}, "h")), values(h));
  // Transposed input: JSON is in logical order.
  Tensor base = make(DType::Int32, {2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_EQ(tensor_to_json(base.as_strided({3, 2}, {1, 3}, 0)).dump(), "[[1,4],[2,5],[3,6]]");
  // Bool and 0-dim.
  Tensor b = make(DType::Bool, {2}, {1, 0});
  EXPECT_EQ(tensor_to_json(b).dump(), "[true,false]");
  EXPECT_EQ(values(tensor_from_json(json::parse("[true,false]"), DType::Bool, {2}, "b")),
            (std::vector<double>{1, 0}));
  Tensor s = make(DType::Float64, {}, {0.1});
  EXPECT_EQ(tensor_to_json(s).dump(), "0.1");
  EXPECT_EQ(tensor_from_json(json(0.1), DType::Float64, {}, "s").get({}), 0.1);
  // int64 beyond 2^53 is exact.
  Tensor l = Tensor::empty(DType::Int64, {2});
  static_cast<int64_t*>(l.data())[0] = std::numeric_limits<int64_t>::min();
  static_cast<int64_t*>(l.data())[1] = (int64_t{1} << 62) + 1;
  Tensor lb = tensor_from_json(tensor_to_json(l), DType::Int64, {2}, "l");
  EXPECT_EQ(int64_values(lb), int64_values(l));
  // Empty dims.
  Tensor e = Tensor::empty(DType::Float32, {2, 0});
  EXPECT_EQ(tensor_to_json(e).dump(), "[[],[]]");
  EXPECT_EQ(tensor_from_json(json::parse("[[],[]]"), DType::Float32, {2, 0}, "e").numel(), 0);
}

std::string from_json_error(const std::string& text, DType dtype, std::vector<int64_t> sizes) {
  try {
    tensor_from_json(json::parse(text), dtype, sizes, "x");
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "<no error>";
}

TEST(TensorJson, ErrorsNameInputAndPosition) {
  std::string msg = from_json_error("[[1, 2, 3], [4, 5]]", DType::Float32, {2, 3});
  EXPECT_NE(msg.find("input 'x' at [1]: dimension 1: expected a list of 3 elements, got 2"),
            std::string::npos)
      << msg;
  msg = from_json_error("[1, 2]", DType::Float32, {3});
  EXPECT_NE(msg.find("input 'x' at []: dimension 0: expected a list of 3 elements, got 2"),
            std::string::npos)
      << msg;
  msg = from_json_error("[[1, 2], 3]", DType::Float32, {2, 2});
  EXPECT_NE(msg.find("input 'x' at [1]: dimension 1: expected a list of 2 elements, got number"),
            std::string::npos)
      << msg;
  msg = from_json_error("[1, \"x\"]", DType::Float32, {2});
  EXPECT_NE(msg.find("input 'x' at [1]: expected a number"), std::string::npos) << msg;
  msg = from_json_error("[[1, 2.5]]", DType::Int32, {1, 2});
  EXPECT_NE(msg.find("input 'x' at [0, 1]: expected an integer for i32, got 2.5"),
            std::string::npos)
      << msg;
  msg = from_json_error("[300]", DType::UInt8, {1});
  EXPECT_NE(msg.find("input 'x' at [0]: value 300 out of range for u8"), std::string::npos) << msg;
  msg = from_json_error("[\"nan\"]", DType::Int64, {1});
  EXPECT_NE(msg.find("input 'x' at [0]: expected an integer"), std::string::npos) << msg;
  msg = from_json_error("[2]", DType::Bool, {1});
  EXPECT_NE(msg.find("out of range for bool"), std::string::npos) << msg;
}

TEST(Compare, AllcloseSemantics) {
  Tensor e = make(DType::Float32, {4}, {1, 100, kNaN, kInf});
  Tensor same = make(DType::Float32, {4}, {1, 100, kNaN, kInf});
  Difference d = compare(same, e, 0, 0);
  EXPECT_TRUE(d.within_tolerance);
  EXPECT_EQ(d.max_abs, 0);
  EXPECT_EQ(d.max_rel, 0);

  Tensor near = make(DType::Float32, {4}, {1.001, 100.5, kNaN, kInf});
  d = compare(near, e, 1e-2, 1e-5);  // 0.5 <= 1e-5 + 1e-2 * 100
  EXPECT_TRUE(d.within_tolerance);
  EXPECT_NEAR(d.max_abs, 0.5, 1e-9);
  EXPECT_NEAR(d.max_rel, 0.005, 1e-9);
  d = compare(near, e, 1e-3, 1e-5);
  EXPECT_FALSE(d.within_tolerance);
  // atol alone.
  EXPECT_TRUE(compare(near, e, 0, 0.6).within_tolerance);
}

TEST(Compare, NaNAndInfMismatches) {
  Tensor e = make(DType::Float64, {1}, {kNaN});
  Tensor a = make(DType::Float64, {1}, {1});
  Difference d = compare(a, e, 1, 1);
  EXPECT_FALSE(d.within_tolerance);
  EXPECT_EQ(d.max_abs, kInf);
  EXPECT_FALSE(compare(e, a, 1, 1).within_tolerance);
  Tensor pinf = make(DType::Float64, {1}, {kInf});
  Tensor ninf = make(DType::Float64, {1}, {-kInf});
  Tensor big = make(DType::Float64, {1}, {1e308});
  EXPECT_TRUE(compare(pinf, pinf, 0, 0).within_tolerance);
  EXPECT_FALSE(compare(pinf, ninf, 1, 1).within_tolerance);
  EXPECT_FALSE(compare(big, pinf, 1, 1).within_tolerance);  // even though rtol * inf = inf
  EXPECT_FALSE(compare(pinf, big, 1, 1).within_tolerance);
  // Relative difference against 0.
  Tensor zero = make(DType::Float64, {1}, {0});
  Tensor tiny = make(DType::Float64, {1}, {1e-9});
  d = compare(tiny, zero, 0, 1e-8);
  EXPECT_TRUE(d.within_tolerance);
  EXPECT_EQ(d.max_rel, kInf);
}

TEST(Compare, MismatchedSizesAndDtypes) {
  Tensor a = make(DType::Float32, {2}, {1, 2});
  Tensor b = make(DType::Float32, {1, 2}, {1, 2});
  Difference d = compare(a, b, 1, 1);
  EXPECT_FALSE(d.within_tolerance);
  EXPECT_EQ(d.max_abs, kInf);
  Tensor c = make(DType::Float64, {2}, {1, 2});
  EXPECT_TRUE(compare(a, c, 0, 0).within_tolerance);
  // Strided actual vs contiguous expected.
  Tensor base = make(DType::Float32, {2, 2}, {1, 2, 3, 4});
  Tensor t = make(DType::Float32, {2, 2}, {1, 3, 2, 4});
  EXPECT_TRUE(compare(base.as_strided({2, 2}, {1, 2}, 0), t, 0, 0).within_tolerance);
}

TEST(TensorJson, NumbersOutOfRangeForTheDtype) {
  // Finite in double, infinite once rounded to the dtype: an error, not a silent inf.
  std::string msg = from_json_error("[1, 1e39]", DType::Float32, {2});
  EXPECT_NE(msg.find("input 'x' at [1]: value 1e+39 out of range for f32"), std::string::npos)
      << msg;
  msg = from_json_error("[70000]", DType::Float16, {1});
  EXPECT_NE(msg.find("input 'x' at [0]: value 70000 out of range for f16"), std::string::npos)
      << msg;
  EXPECT_EQ(tensor_from_json(json::parse("[65504, \"inf\"]"), DType::Float16, {2}, "h").get({1}),
            kInf);
  // Integral but beyond the dtype: "out of range", not "expected an integer".
  msg = from_json_error("[1e30]", DType::Int32, {1});
  EXPECT_NE(msg.find("input 'x' at [0]: value 1e+30 out of range for i32"), std::string::npos)
      << msg;
  msg = from_json_error("[18446744073709551616]", DType::Int64, {1});  // 2^64, parsed as double
  EXPECT_NE(msg.find("out of range for i64"), std::string::npos) << msg;
}

TEST(TensorJson, WrongValuesAreDescribedByABoundedPrefix) {
  // A million levels where a number belongs: the message must neither recurse through them
  // nor quote them.
  const json deep =
      json::parse("[" + std::string(1000000, '[') + std::string(1000000, ']') + ", 1]");
  std::string msg;
  try {
    tensor_from_json(deep, DType::Float32, {2}, "x");
  } catch (const std::invalid_argument& e) {
    msg = e.what();
  }
  EXPECT_NE(msg.find("input 'x' at [0]: expected a number"), std::string::npos) << msg;
  EXPECT_NE(msg.find("got array [[[["), std::string::npos) << msg;
  EXPECT_LT(msg.size(), 200u) << msg;
  // A huge flat value: the description stops after its prefix.
  const json big(std::vector<double>(1000000, 1.5));
  const std::string described = describe_json(big);
  EXPECT_EQ(described.rfind("array [1.5,1.5,", 0), 0u) << described;
  EXPECT_LE(described.size(), 50u) << described;
  EXPECT_EQ(describe_json(json("abc")), R"(string "abc")");
}

TEST(TensorJson, StridedLayoutKeepsEveryValueOrSaysWhichIsLost) {
  // Transposed layout: the values keep their logical positions.
  Tensor t =
      tensor_from_json(json::parse("[[1, 2, 3], [4, 5, 6]]"), DType::Float32, {2, 3}, {1, 2}, "t");
  EXPECT_EQ(t.strides(), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(values(t), (std::vector<double>{1, 2, 3, 4, 5, 6}));
  // int64 beyond 2^53 is copied exactly, not through double.
  Tensor l = tensor_from_json(json::parse("[9007199254740993]"), DType::Int64, {1}, {1}, "l");
  EXPECT_EQ(int64_values(l), (std::vector<int64_t>{9007199254740993}));
  // A broadcast dim (stride 0) stores both rows at one address: they must agree.
  Tensor b = tensor_from_json(json::parse("[[1, 2], [1, 2]]"), DType::Float32, {2, 2}, {0, 1}, "b");
  EXPECT_EQ(values(b), (std::vector<double>{1, 2, 1, 2}));
  std::string msg;
  try {
    tensor_from_json(json::parse("[[1, 2], [1, 7]]"), DType::Float32, {2, 2}, {0, 1}, "b");
  } catch (const std::invalid_argument& e) {
    msg = e.what();
  }
  EXPECT_NE(msg.find("input 'b' at [0, 1]: value 2.0 differs from 7.0"), std::string::npos) << msg;
}

TEST(TensorJson, WriteStreamsAndRefusesHugeTensors) {
  Tensor t = make(DType::Float32, {2, 2}, {1, kNaN, -kInf, 0.25});
  std::ostringstream text;
  write_tensor_json(text, t);
  EXPECT_EQ(text.str(), R"([[1.0,"nan"],["-inf",0.25]])");
  // 10^10 elements of one value: refused before writing anything.
  Tensor huge = make(DType::Float32, {1}, {1}).as_strided({100000, 100000}, {0, 0}, 0);
  std::ostringstream none;
  EXPECT_THROW(write_tensor_json(none, huge), std::length_error);
  EXPECT_TRUE(none.str().empty());
}

TEST(RandomTensor, BroadcastDimsHoldOneDrawnValue) {
  // Values of random_tensor with the stride-0 dim of size 1, repeated along it.
  Tensor s = random_tensor_strided(DType::Float32, {3, 4}, {0, 1}, 5);
  const std::vector<double> row = values(random_tensor(DType::Float32, {1, 4}, 5));
  std::vector<double> expected;
  for (int i = 0; i < 3; ++i) expected.insert(expected.end(), row.begin(), row.end());
  EXPECT_EQ(values(s), expected);
  // 10^10 logical elements, one drawn value: instant, and in the requested range.
  Tensor huge = random_tensor_strided(DType::Float32, {100000, 100000}, {0, 0}, 9, 0.0, 1.0);
  EXPECT_EQ(huge.storage()->nbytes(), 4u);
  const double v = huge.get({99999, 12345});
  EXPECT_GE(v, 0.0);
  EXPECT_LT(v, 1.0);
  EXPECT_EQ(v, huge.get({0, 0}));
}

TEST(Compare, BroadcastDimsCostTheirDistinctElements) {
  // Two expanded views of 10^10 elements each compare one element.
  Tensor one = make(DType::Float32, {1}, {1.0});
  Tensor other = make(DType::Float32, {1}, {1.5});
  const std::vector<int64_t> sizes = {100000, 100000};
  Difference d =
      compare(one.as_strided(sizes, {0, 0}, 0), other.as_strided(sizes, {0, 0}, 0), 0, 0);
  EXPECT_FALSE(d.within_tolerance);
  EXPECT_EQ(d.max_abs, 0.5);
  // Stride 0 in one of them only along dim 0: that dim is visited, dim 1 is not.
  Tensor column = Tensor::empty(DType::Float32, {100000});
  for (int64_t i = 0; i < 100000; ++i) column.set({i}, 1.0);
  column.set({77777}, 3.0);
  d = compare(column.as_strided(sizes, {1, 0}, 0), one.as_strided(sizes, {0, 0}, 0), 0, 0);
  EXPECT_FALSE(d.within_tolerance);
  EXPECT_EQ(d.max_abs, 2.0);
  // Small case against a materialized tensor: a difference off the broadcast row is found.
  Tensor row = make(DType::Float32, {1, 3}, {1, 2, 3});
  Tensor full = make(DType::Float32, {4, 3}, {1, 2, 3, 1, 2, 3, 1, 5, 3, 1, 2, 3});
  d = compare(row.as_strided({4, 3}, {0, 1}, 0), full, 0, 0);
  EXPECT_FALSE(d.within_tolerance);
  EXPECT_EQ(d.max_abs, 3.0);
  full.set({2, 1}, 2.0);
  EXPECT_TRUE(compare(row.as_strided({4, 3}, {0, 1}, 0), full, 0, 0).within_tolerance);
}

TEST(Compare, EagerResultOfAHugeExpandComparesQuickly) {
  // The interpreter returns the expand as a view; comparing it with itself is one element.
  const std::vector<Tensor> out =
      testing::run_text("def g(x: f32[1]):\n    y = expand(x, [100000, 100000])\n    return y\n",
                        {make(DType::Float32, {1}, {kNaN})});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].strides(), (std::vector<int64_t>{0, 0}));
  EXPECT_TRUE(compare(out[0], out[0], 0, 0).within_tolerance);
}

std::filesystem::path json_temp_file(const std::string& name, const std::string& text) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("stax-json-test-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const auto path = dir / name;
  std::ofstream(path) << text;
  return path;
}

std::string read_json_error(const std::string& path, size_t max_depth = 64) {
  try {
    read_json_file(path, max_depth);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "<no error>";
}

TEST(JsonFile, NestingIsBoundedAndErrorsNameFileLineColumn) {
  const auto nested = json_temp_file("nested.json", "{\"a\": [\n  [[1]], \"[[[[[[\"]}");
  EXPECT_EQ(read_json_file(nested.string(), 4)["a"][1], "[[[[[[");  // brackets in strings
  EXPECT_EQ(read_json_error(nested.string(), 3),
            nested.string() + ": line 2 col 4: nested deeper than 3 levels");
  const auto deep =
      json_temp_file("deep.json", std::string(1000000, '[') + std::string(1000000, ']'));
  EXPECT_EQ(read_json_error(deep.string()),
            deep.string() + ": line 1 col 65: nested deeper than 64 levels");

  const auto syntax = json_temp_file("syntax.json", "{\"x\": [1,\n 2 x]}");
  std::string msg = read_json_error(syntax.string());
  EXPECT_EQ(msg.rfind(syntax.string() + ": line 2 col 4: syntax error while parsing array", 0), 0u)
      << msg;
  EXPECT_EQ(msg.find("json.exception"), std::string::npos) << msg;
  const auto overflow = json_temp_file("overflow.json", "[1, -1e400]");
  EXPECT_EQ(read_json_error(overflow.string()),
            overflow.string() + ": line 1 col 5: number overflow parsing '-1e400'");
  const auto twice = json_temp_file("twice.json", R"({"x": 1, "x": 2})");
  EXPECT_EQ(read_json_error(twice.string()),
            twice.string() + ": key 'x' appears twice in one object");
}

TEST(JsonFile, MissingDirectoryAndUnreadable) {
  const auto dir = json_temp_file("any.json", "{}").parent_path();
  EXPECT_EQ(read_json_error((dir / "absent.json").string()),
            (dir / "absent.json").string() + ": cannot open: No such file or directory");
  EXPECT_EQ(read_json_error(dir.string()), dir.string() + ": is a directory, not a JSON file");
  EXPECT_EQ(read_json_error("/proc/self/mem"), "/proc/self/mem: read failed: Input/output error");
}

std::string write_error(const std::string& path) {
  try {
    write_text_file(path, [](std::ostream& out) { out << std::string(100000, 'x'); });
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "<no error>";
}

TEST(JsonFile, FailedWritesNameTheFileAndTheCause) {
  EXPECT_EQ(write_error("/dev/full"), "/dev/full: write failed: No space left on device");
  const auto dir = json_temp_file("any.json", "{}").parent_path();
  EXPECT_EQ(write_error(dir.string()), dir.string() + ": cannot create: Is a directory");
  EXPECT_EQ(write_error("/nonexistent-stax-dir/x.json"),
            "/nonexistent-stax-dir/x.json: cannot create: No such file or directory");
  const auto ok = dir / "written.txt";
  EXPECT_EQ(write_error(ok.string()), "<no error>");
  EXPECT_EQ(std::filesystem::file_size(ok), 100000u);
}

}  // namespace
}  // namespace stax::eager
