// external/measurement_cache.h: a measured decision is taken once per process, kept on disk,
// read back from disk by a process that has not measured it, and a file that does not hold
// the key it is named for, or a directory that cannot be written, costs a measurement and
// nothing else.
#include <gtest/gtest.h>

#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "external/measurement_cache.h"

namespace stax::external::detail {
namespace {

namespace fs = std::filesystem;

fs::path fresh_dir(const std::string& name) {
  const fs::path dir =
      fs::temp_directory_path() / ("stax-measurement-cache-" + std::to_string(getpid())) / name;
  fs::remove_all(dir);
  return dir;
}

std::string contents(const fs::path& file) {
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(MeasurementCache, MeasuresOncePerProcessAndKeepsTheAnswerOnDisk) {
  const fs::path dir = fresh_dir("once");
  int measured = 0;
  auto measure = [&] {
    ++measured;
    return std::string("Panswer one");
  };
  bool from_disk = true;
  EXPECT_EQ(measured_once("key one", dir.string(), measure, &from_disk), "Panswer one");
  EXPECT_FALSE(from_disk);
  EXPECT_EQ(measured_once("key one", dir.string(), measure, &from_disk), "Panswer one");
  EXPECT_EQ(measured, 1);
  const fs::path file = measurement_file(dir.string(), "key one");
  ASSERT_TRUE(fs::exists(file));
  EXPECT_NE(contents(file).find("key one\nPanswer one\n"), std::string::npos) << contents(file);

  // Another directory holding the same file, as a later process finds it: read, not measured.
  const fs::path copy = fresh_dir("copy");
  fs::create_directories(copy);
  fs::copy_file(file, measurement_file(copy.string(), "key one"));
  EXPECT_EQ(measured_once("key one", copy.string(), measure, &from_disk), "Panswer one");
  EXPECT_TRUE(from_disk);
  EXPECT_EQ(measured, 1);
}

TEST(MeasurementCache, AFileForAnotherKeyOrMalformedIsMeasuredAgainAndReplaced) {
  const fs::path dir = fresh_dir("malformed");
  fs::create_directories(dir);
  int measured = 0;
  auto measure = [&] {
    ++measured;
    return std::string("Dfresh");
  };
  int case_number = 0;
  for (const char* bad : {"", "only one line\n", "another key\nPstale\n"}) {
    const std::string key = "key " + std::to_string(++case_number);
    std::ofstream(measurement_file(dir.string(), key)) << bad;
    bool from_disk = true;
    EXPECT_EQ(measured_once(key, dir.string(), measure, &from_disk), "Dfresh");
    EXPECT_FALSE(from_disk);
    EXPECT_NE(contents(measurement_file(dir.string(), key)).find(key + "\nDfresh\n"),
              std::string::npos);
  }
  EXPECT_EQ(measured, 3);
}

TEST(MeasurementCache, ADirectoryThatCannotBeWrittenOnlyLosesTheSaving) {
  const fs::path parent = fresh_dir("unwritable");
  fs::create_directories(parent);
  std::ofstream(parent / "a-file") << "not a directory";
  const fs::path dir = parent / "a-file" / "library-plans";
  int measured = 0;
  EXPECT_EQ(measured_once("key", dir.string(),
                          [&] { return std::string("P") + std::to_string(++measured); }),
            "P1");
  EXPECT_FALSE(fs::exists(dir));
  // No directory at all: the process's answer only.
  EXPECT_EQ(measured_once("key", "", [&] { return std::string("P") + std::to_string(++measured); }),
            "P2");
  EXPECT_EQ(measured_once("key", "", [&] { return std::string("P") + std::to_string(++measured); }),
            "P2");
}

}  // namespace
}  // namespace stax::external::detail
