// safetensors round trips, atomic writes and corrupt-file errors; JSON writer.
#include "tensor/safetensors.h"

#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "common/json.h"

using namespace moe;

TEST_CASE("safetensors round trip with metadata", "[io][safetensors]") {
  const std::string path = (std::filesystem::temp_directory_path() / "moe_st_test.safetensors").string();
  Tensor a = Tensor::from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, Shape{2, 3});
  Tensor b = Tensor::from_vector(std::vector<int32_t>{7, -8}, Shape{2});
  Tensor c = Tensor::from_vector(std::vector<float>{0.5f}, Shape{1}, Device::cpu(), DType::bf16);
  save_safetensors(path, {{"enc.w", a}, {"ids", b}, {"h", c}}, {{"step", "12"}, {"config", "model: {d: 512}"}});
  SafetensorsFile f = load_safetensors(path);
  REQUIRE(f.tensors.size() == 3);
  CHECK(f.tensors[0].first == "enc.w");
  CHECK(f.get("enc.w").shape() == Shape{2, 3});
  CHECK(f.get("enc.w").to_vector<float>() == a.to_vector<float>());
  CHECK(f.get("ids").to_vector<int32_t>() == std::vector<int32_t>{7, -8});
  CHECK(f.get("h").dtype() == DType::bf16);
  CHECK(f.metadata.at("step") == "12");
  CHECK(f.metadata.at("config") == "model: {d: 512}");
  CHECK_THROWS_WITH(f.get("nope"), Catch::Contains("nope"));
  // Header layout: little-endian length, then JSON, data aligned to 8 bytes.
  std::ifstream in(path, std::ios::binary);
  unsigned char len[8];
  in.read(reinterpret_cast<char*>(len), 8);
  CHECK((len[0] + 8) % 8 == 0);
  std::filesystem::remove(path);
}

TEST_CASE("safetensors: truncated and garbage files give errors naming the path", "[io][safetensors]") {
  const std::string path = (std::filesystem::temp_directory_path() / "moe_st_bad.safetensors").string();
  save_safetensors(path, {{"w", Tensor::from_vector(std::vector<float>(100, 1.f), Shape{100})}});
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 10);
  CHECK_THROWS_WITH(load_safetensors(path), Catch::Contains(path) && Catch::Contains("truncated"));
  { std::ofstream(path) << "hello"; }
  CHECK_THROWS_WITH(load_safetensors(path), Catch::Contains(path));
  CHECK_THROWS_WITH(load_safetensors(path + ".missing"), Catch::Contains("cannot open"));
  std::filesystem::remove(path);
}

TEST_CASE("safetensors: missing fields, wrong kinds and impossible shapes name the file", "[io][safetensors]") {
  // Each of these escaped as a yaml-cpp exception or overflowed a size before (tests/fuzz/safetensors.cpp).
  const std::string path = (std::filesystem::temp_directory_path() / "moe_st_header.safetensors").string();
  const auto write = [&](std::string json) {
    json.resize((json.size() + 7) / 8 * 8, ' ');
    std::string bytes(8, '\0');
    for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>(json.size() >> (8 * i));
    std::ofstream(path, std::ios::binary) << bytes << json << std::string(16, '\0');
  };
  for (const char* json :
       {R"({"w": {"dtype": "F32", "shape": [2]}})", R"({"w": {"dtype": "F32", "shape": [2], "data_offsets": 8}})",
        R"({"w": {"dtype": ["F32"], "shape": [2], "data_offsets": [0, 8]}})",
        R"({"w": {"dtype": "F32", "shape": "2", "data_offsets": [0, 8]}})",
        R"({"w": {"dtype": "F32", "shape": [-2, -1], "data_offsets": [0, 8]}})",
        R"({"w": {"dtype": "F32", "shape": [4611686018427387904, 4], "data_offsets": [0, 0]}})",
        R"({"__metadata__": {"k": {"nested": 1}}})", R"({"w": 3})"}) {
    INFO(json);
    write(json);
    CHECK_THROWS_AS(load_safetensors(path), Error);
    CHECK_THROWS_WITH(load_safetensors(path), Catch::Contains(path));
  }
  std::filesystem::remove(path);
}

TEST_CASE("safetensors: names and keys as long as yaml-cpp reads them back, no longer", "[io][safetensors]") {
  const std::string path = (std::filesystem::temp_directory_path() / "moe_st_keys.safetensors").string();
  const Tensor t = Tensor::from_vector(std::vector<float>{1, 2}, Shape{2});
  // 1,000 characters as JSON: written, then read back the same.
  const std::string longest = std::string(994, 'w') + "\x06";  // \u0006: 6 characters as JSON
  save_safetensors(path, {{longest, t}}, {{std::string(1000, 'k'), "v"}});
  const SafetensorsFile f = load_safetensors(path);
  CHECK(f.tensors.at(0).first == longest);
  CHECK(f.metadata.count(std::string(1000, 'k')) == 1);
  CHECK_THROWS_WITH(save_safetensors(path, {{longest + "w", t}}),
                    Catch::Contains(path) && Catch::Contains("a tensor name of 1001 characters as JSON"));
  CHECK_THROWS_WITH(save_safetensors(path, {{"w", t}}, {{std::string(1001, 'k'), "v"}}),
                    Catch::Contains("a metadata key of 1001 characters"));
  // A name of raw control characters (not JSON, but yaml-cpp takes it) that would be 1,200 characters escaped:
  // found by fuzzing, whose copy of the file could not be read back.
  std::string json =
      "{\"" + std::string(200, '\x06') + "\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]}}";
  json.resize((json.size() + 7) / 8 * 8, ' ');
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<char>(json.size() >> (8 * i));
  std::ofstream(path, std::ios::binary) << bytes << json << std::string(8, '\0');
  CHECK_THROWS_WITH(load_safetensors(path), Catch::Contains("a tensor name of 1200 characters as JSON"));
  std::filesystem::remove(path);
}

TEST_CASE("atomic write leaves no temporary file and replaces the old content", "[io]") {
  const auto dir = std::filesystem::temp_directory_path() / "moe_atomic_test";
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "f.txt").string();
  write_file_atomic(path, "one");
  write_file_atomic(path, "two");
  std::ifstream in(path);
  std::string s;
  in >> s;
  CHECK(s == "two");
  CHECK(std::distance(std::filesystem::directory_iterator(dir), {}) == 1);
  std::filesystem::remove_all(dir);
}

TEST_CASE("json writer", "[io][json]") {
  const std::string s = JsonObject().add("a", 1).add("b", 2.5).add("c", "x\"y\n").add("d", true).str();
  CHECK(s == R"({"a":1,"b":2.5,"c":"x\"y\n","d":true})");
  CHECK(json_number(0.1) == "0.1");
  CHECK(json_number(std::nan("")) == "null");
}
