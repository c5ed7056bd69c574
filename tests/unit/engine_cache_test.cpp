// Compiled engines (supervisor/engines/): the key names everything an engine is built for; the
// cache hands a worker an engine only when its manifest names the key asked for and its bytes
// are the ones built; a folder or file others may write is not believed.
#include <doctest/doctest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

#include "common/file_util.h"
#include "common/model_card.h"
#include "supervisor/engines/engine_cache.h"
#include "supervisor/engines/engine_key.h"

using namespace framemill;
namespace fs = std::filesystem;

namespace {

EngineKey SomeKey() {
  EngineKey k;
  k.model_sha256 = std::string(64, 'a');
  k.width = 1920;
  k.height = 1080;
  k.batch = 4;
  k.precision = Precision::kFp16;
  k.gpu = "NVIDIA H100 80GB HBM3";
  k.torch = "2.11.0";
  k.compiler = "c++ (Ubuntu 13.3.0-6ubuntu2~24.04) 13.3.0";
  return k;
}

struct Scratch {
  std::string dir;
  Scratch() {
    char tmpl[] = "/tmp/framemill-engines-XXXXXX";
    dir = ::mkdtemp(tmpl);
  }
  ~Scratch() { fs::remove_all(dir); }
  // A finished build folder as the builder leaves it: a package and its card (scale 2).
  std::string Build(const std::string& name, const std::string& bytes) const {
    const std::string b = dir + "/cache/.build-" + name;
    fs::create_directories(b);
    ::chmod((dir + "/cache").c_str(), 0700);
    ::chmod(b.c_str(), 0700);
    std::ofstream(b + "/engine.pt2") << bytes;
    ModelCard card;
    card.name = "restore";
    card.format = "pt2";
    card.scale = 2;
    REQUIRE(SaveModelCard(b + "/engine.pt2", card).ok());
    return b;
  }
  std::string cache() const { return dir + "/cache"; }
};

}  // namespace

TEST_CASE("engines: the key names the model, shape, batch, precision, GPU, torch and compiler") {
  const EngineKey k = SomeKey();
  CHECK(k.Id().size() == 32);
  CHECK(k.Id().find_first_not_of("0123456789abcdef") == std::string::npos);
  CHECK(k.Text().find("shape 1920x1080\n") != std::string::npos);
  // The recipe leads: an engine built the old way is another key.
  CHECK(k.Text().rfind("framemill engine " + std::to_string(kEngineRecipe) + "\n", 0) == 0);
  CHECK(k.Describe() == "1920x1080 batch 4 fp16 on NVIDIA H100 80GB HBM3");
  std::set<std::string> ids = {k.Id()};
  auto differs = [&](EngineKey other) { CHECK(ids.insert(other.Id()).second); };
  EngineKey o = k;
  o.model_sha256[0] = 'b';
  differs(o);
  o = k, o.width = 1921, differs(o);
  o = k, o.height = 1088, differs(o);
  o = k, o.batch = 8, differs(o);
  o = k, o.precision = Precision::kFp32, differs(o);
  o = k, o.gpu = "NVIDIA H200", differs(o);
  o = k, o.torch = "2.12.0", differs(o);
  o = k, o.compiler = "c++ 14.1", differs(o);
  CHECK(SomeKey().Id() == k.Id());  // the same fields, the same id
}

TEST_CASE("engines: the GPU's name comes from the driver's information, in bus order") {
  Scratch s;
  const std::string root = s.dir + "/nvidia";
  fs::create_directories(root + "/gpus/0000:1b:00.0");
  fs::create_directories(root + "/gpus/0000:03:00.0");
  std::ofstream(root + "/gpus/0000:1b:00.0/information")
      << "Model: \t\t NVIDIA H200\nIRQ:   \t\t 17\n";
  std::ofstream(root + "/gpus/0000:03:00.0/information")
      << "Model: \t\t NVIDIA H100 80GB HBM3\nIRQ:   \t\t 16\n";
  CHECK(NvidiaGpuName(0, root).value() == "NVIDIA H100 80GB HBM3");
  CHECK(NvidiaGpuName(1, root).value() == "NVIDIA H200");
  Result<std::string> none = NvidiaGpuName(2, root);
  REQUIRE(!none.ok());
  CHECK(none.status().message().find("lists 2") != std::string::npos);
  CHECK(!NvidiaGpuName(0, s.dir + "/absent").ok());
  std::ofstream(root + "/gpus/0000:03:00.0/information") << "IRQ: 16\n";
  CHECK(NvidiaGpuName(0, root).status().message().find("names no model") != std::string::npos);
}

TEST_CASE("engines: a kept engine is found by its key, with its bytes checked") {
  Scratch s;
  const EngineKey key = SomeKey();
  Result<CachedEngine> kept = KeepEngine(s.cache(), s.Build("a", "package bytes"), key, 42.5);
  REQUIRE(kept.ok());
  CHECK(kept->id == key.Id());
  CHECK(kept->folder == s.cache() + "/" + key.Id());
  CHECK(!PathExists(s.cache() + "/.build-a"));

  UniqueFd fd;
  int scale = 0;
  Result<std::optional<CachedEngine>> found = FindEngine(s.cache(), key, &fd, &scale);
  REQUIRE_MESSAGE(found.ok(), found.status().message());
  REQUIRE(found->has_value());
  CHECK(fd.valid());
  CHECK(scale == 2);
  CHECK((*found)->bytes == 13);
  CHECK((*found)->build_seconds == doctest::Approx(42.5));
  char head[8] = {};
  CHECK(::pread(fd.get(), head, 7, 0) == 7);
  CHECK(std::string(head) == "package");

  // Another key (another batch) is another folder: nothing there.
  EngineKey other = key;
  other.batch = 8;
  UniqueFd none;
  Result<std::optional<CachedEngine>> missing = FindEngine(s.cache(), other, &none, &scale);
  REQUIRE(missing.ok());
  CHECK(!missing->has_value());
  CHECK(!none.valid());

  // Listed, with what it is for.
  std::vector<CachedEngine> list = ListEngines(s.cache());
  REQUIRE(list.size() == 1);
  CHECK(list[0].key_text == key.Text());

  // A package changed after it was built is refused, and not handed over.
  std::ofstream(kept->folder + "/engine.pt2") << "package BYTES";
  UniqueFd changed;
  Result<std::optional<CachedEngine>> refused = FindEngine(s.cache(), key, &changed, &scale);
  REQUIRE(!refused.ok());
  CHECK(refused.status().code() == StatusCode::kModelInvalid);
  CHECK(refused.status().message().find("changed since it was built") != std::string::npos);
  CHECK(!changed.valid());
}

TEST_CASE("engines: an entry of another key, or one others may write, is not believed") {
  Scratch s;
  const EngineKey key = SomeKey();
  EngineKey other = key;
  other.torch = "2.10.0";
  // The other key's entry moved into this key's folder name.
  Result<CachedEngine> kept = KeepEngine(s.cache(), s.Build("b", "bytes"), other, 1);
  REQUIRE(kept.ok());
  fs::rename(kept->folder, s.cache() + "/" + key.Id());
  UniqueFd fd;
  int scale = 0;
  Result<std::optional<CachedEngine>> wrong = FindEngine(s.cache(), key, &fd, &scale);
  REQUIRE(!wrong.ok());
  CHECK(wrong.status().message().find("another key") != std::string::npos);

  Result<CachedEngine> mine = KeepEngine(s.cache(), s.Build("c", "bytes"), key, 1);
  REQUIRE(mine.ok());
  ::chmod(mine->folder.c_str(), 0770);
  Result<std::optional<CachedEngine>> shared = FindEngine(s.cache(), key, &fd, &scale);
  REQUIRE(!shared.ok());
  CHECK(shared.status().message().find("this user's alone") != std::string::npos);
  ::chmod(mine->folder.c_str(), 0700);
  ::chmod((mine->folder + "/engine.pt2").c_str(), 0666);
  CHECK(!FindEngine(s.cache(), key, &fd, &scale).ok());
  ::chmod((mine->folder + "/engine.pt2").c_str(), 0600);
  CHECK(FindEngine(s.cache(), key, &fd, &scale).ok());
}

TEST_CASE("engines: clearing removes every entry and every unfinished build") {
  Scratch s;
  REQUIRE(KeepEngine(s.cache(), s.Build("d", "one"), SomeKey(), 1).ok());
  EngineKey two = SomeKey();
  two.batch = 2;
  REQUIRE(KeepEngine(s.cache(), s.Build("e", "two"), two, 1).ok());
  s.Build("unfinished", "half");
  CHECK(ListEngines(s.cache()).size() == 2);  // a build in progress is not an entry
  Result<int> removed = ClearEngines(s.cache());
  REQUIRE(removed.ok());
  CHECK(*removed == 2);
  CHECK(fs::is_empty(s.cache()));
}

TEST_CASE("engines: one build of a key at a time: a second waits, and a stop ends its wait") {
  Scratch s;
  const EngineKey key = SomeKey();
  Result<UniqueFd> first = LockEngineKey(s.dir, key);
  REQUIRE(first.ok());
  // Another key builds beside it.
  EngineKey other = key;
  other.batch = 8;
  CHECK(LockEngineKey(s.dir, other).ok());
  // The same key waits, here until its stop is set.
  std::atomic<bool> stop{true};
  Result<UniqueFd> waiting = LockEngineKey(s.dir, key, &stop);
  REQUIRE_FALSE(waiting.ok());
  CHECK(waiting.status().code() == StatusCode::kCancelled);
  first->Reset();  // the first build ends: the lock is free
  stop.store(false);
  CHECK(LockEngineKey(s.dir, key, &stop).ok());
}
