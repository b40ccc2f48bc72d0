// Algorithm 8.1.
#include <gtest/gtest.h>

#include "codegen/parallel_depth.h"

namespace stax::codegen {
namespace {

TEST(ParallelDepth, SeedCases) {
  EXPECT_EQ(parallel_depth({64, 128}, 4, 2), 1);  // Example 1.1: par 64 >= 2P stops
  EXPECT_EQ(parallel_depth({1024}, 4, 1), 0);     // 1024 / 4 < 512: serial
  EXPECT_EQ(parallel_depth({8, 32}, 4, 2), 0);    // 256 iterations
}

TEST(ParallelDepth, MoreCases) {
  EXPECT_EQ(parallel_depth({2, 4096}, 4, 2), 2);     // 2 units are too few for 4 threads
  EXPECT_EQ(parallel_depth({4, 4096}, 4, 2), 1);     // par == P stops
  EXPECT_EQ(parallel_depth({3, 3, 4096}, 4, 3), 2);  // 9 >= 2P after two levels
  EXPECT_EQ(parallel_depth({64, 128}, 1, 2), 0);     // one thread
  EXPECT_EQ(parallel_depth({2, 4096}, 4, 1), 1);     // capped by the parallelizable loops
  EXPECT_EQ(parallel_depth({2, 300}, 2, 2), 0);      // 600 / 2 < 512
  EXPECT_EQ(parallel_depth({4096}, 2, 1), 1);
  EXPECT_EQ(parallel_depth({}, 4, 0), 0);
}

}  // namespace
}  // namespace stax::codegen
