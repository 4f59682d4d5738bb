// main() for a fuzz target where there is no libFuzzer (g++, the `check` build): runs
// LLVMFuzzerTestOneInput on every seed input, then on random mutations of the seeds until the
// time is spent. No coverage guidance: it is a smoke test that keeps each target running in CI,
// not a replacement for a libFuzzer session.
//
//   elf_fuzz_smoke -max_total_time=20 corpus/elf_seed /usr/lib/x86_64-linux-gnu/libstdc++.so.6
//   elf_fuzz_smoke crash-12345        # runs one saved input once (no time given: no mutations)
//
// Arguments are files or directories (their regular files, not recursively). Options, spelled as
// libFuzzer's: -max_total_time=S (default 0: only the given inputs), -seed=N (default 1; the
// same seed and inputs give the same sequence), -runs=N (most mutated inputs), -max_len=N
// (default: the largest seed, at least 4096), -timeout=S (one input running longer aborts,
// default 10), -artifact_prefix=P (where an input that crashed or hung is written, default "./").
// Prints how many inputs ran; exits 0, or dies the way the target did.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
// Provided by the sanitizer runtimes; null in a build without them.
// NOLINTNEXTLINE(bugprone-reserved-identifier): the runtime's own name for it
extern "C" __attribute__((weak)) void __sanitizer_set_death_callback(void (*callback)());

namespace {

namespace fs = std::filesystem;
using Input = std::vector<unsigned char>;
using Clock = std::chrono::steady_clock;

struct Options {
  std::vector<std::string> inputs;
  double max_total_time = 0;
  std::uint64_t seed = 1;
  std::optional<std::uint64_t> runs;
  std::optional<std::size_t> max_len;
  double timeout = 10;
  std::string artifact_prefix = "./";
};

// --- what a crash or a hang leaves behind
// ---------------------------------------------------------

// The input being run, for the crash handlers: they may only use async-signal-safe calls.
std::atomic<const unsigned char*> g_current_data{nullptr};
std::atomic<std::size_t> g_current_size{0};
std::array<char, 4096> g_artifact_path{};
std::atomic<std::uint64_t> g_current_run{0};

void write_all(int fd, const void* data, std::size_t size) {
  const auto* bytes = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t n = ::write(fd, bytes, size);
    if (n <= 0) return;
    bytes += n;
    size -= static_cast<std::size_t>(n);
  }
}

void save_current_input() {
  static std::atomic<bool> saved{false};
  const unsigned char* data = g_current_data.load();
  if (data == nullptr || saved.exchange(true)) return;
  int fd = ::open(g_artifact_path.data(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd == -1) return;
  write_all(fd, data, g_current_size.load());
  (void)::close(fd);
  const char note[] = "\nstandalone fuzz driver: the input that failed is in ";
  write_all(STDERR_FILENO, note, sizeof(note) - 1);
  write_all(STDERR_FILENO, g_artifact_path.data(), std::strlen(g_artifact_path.data()));
  write_all(STDERR_FILENO, "\n", 1);
}

void on_fatal_signal(int signal_number) {
  save_current_input();
  (void)::signal(signal_number, SIG_DFL);
  (void)::raise(signal_number);
}

// With a sanitizer runtime its death callback saves the input and its own handlers report the
// crash (replacing them would lose the report); without one, signal handlers save it. An abort()
// (an unexpected exception, a broken contract) goes through SIGABRT either way.
void install_crash_handlers(const Options& options) {
  std::string path = options.artifact_prefix + "crash-" + std::to_string(::getpid());
  (void)std::snprintf(g_artifact_path.data(), g_artifact_path.size(), "%s", path.c_str());
  if (&__sanitizer_set_death_callback != nullptr) {
    __sanitizer_set_death_callback(save_current_input);
  } else {
    for (int signal_number : {SIGSEGV, SIGBUS, SIGFPE, SIGILL}) {
      (void)::signal(signal_number, on_fatal_signal);
    }
  }
  (void)::signal(SIGABRT, on_fatal_signal);
}

// Aborts (saving the input) when one input runs longer than `timeout` seconds.
std::jthread start_watchdog(double timeout) {
  return std::jthread([timeout](const std::stop_token& stop) {
    std::uint64_t last_run = g_current_run.load();
    Clock::time_point since = Clock::now();
    while (!stop.stop_requested()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      std::uint64_t run = g_current_run.load();
      if (run != last_run) {
        last_run = run;
        since = Clock::now();
      } else if (std::chrono::duration<double>(Clock::now() - since).count() > timeout) {
        (void)std::fprintf(stderr, "standalone fuzz driver: input %llu ran longer than %gs\n",
                           static_cast<unsigned long long>(run), timeout);
        save_current_input();
        std::abort();
      }
    }
  });
}

// Runs one input from an allocation of exactly its size, so that the sanitizers see any read
// past its end.
void run_one(const Input& input) {
  auto copy = std::make_unique<unsigned char[]>(input.size());
  std::copy(input.begin(), input.end(), copy.get());
  g_current_size = input.size();
  g_current_data = copy.get();
  g_current_run.fetch_add(1);
  LLVMFuzzerTestOneInput(copy.get(), input.size());
  g_current_data = nullptr;
}

// --- mutations
// ------------------------------------------------------------------------------------

class Mutator {
 public:
  Mutator(std::uint64_t seed, std::size_t max_len) : random_(seed), max_len_(max_len) {}

  // Applies one to five random edits to `input`.
  void mutate(Input& input) {
    std::size_t edits = 1 + below(5);
    for (std::size_t i = 0; i < edits; ++i) edit(input);
  }

  std::size_t pick(std::discrete_distribution<std::size_t>& distribution) {
    return distribution(random_);
  }

  std::size_t below(std::size_t bound) {
    return bound == 0 ? 0 : std::uniform_int_distribution<std::size_t>(0, bound - 1)(random_);
  }

  // A position below `bound`: half the time anywhere, else within 4 KiB of either end, where
  // formats keep their headers and tables of contents.
  std::size_t position(std::size_t bound) {
    constexpr std::size_t kNearEnd = 4096;
    switch (below(4)) {
      case 0:
        return below(std::min(bound, kNearEnd));
      case 1:
        return bound - 1 - below(std::min(bound, kNearEnd));
      default:
        return below(bound);
    }
  }

 private:
  // Edits that keep the size come first and most often: inserting, erasing or cutting bytes
  // moves everything after them, which most formats notice at once.
  void edit(Input& input) {
    if (input.empty()) return insert_bytes(input);
    std::size_t choice = below(16);
    if (choice < 3) {
      input[position(input.size())] ^= static_cast<unsigned char>(1U << below(8));
    } else if (choice < 5) {
      input[position(input.size())] = static_cast<unsigned char>(below(256));
    } else if (choice < 8) {
      set_field(input);
    } else if (choice < 11) {
      add_to_field(input);
    } else if (choice < 13) {
      copy_range(input);
    } else if (choice == 13) {
      insert_bytes(input);
    } else if (choice == 14) {
      erase_range(input);
    } else {
      input.resize(below(input.size()));
    }
  }

  // A 2, 4 or 8-byte field at an offset aligned to its size, in either byte order.
  struct FieldAt {
    std::size_t offset;
    std::size_t width;
    bool little_endian;
  };

  std::optional<FieldAt> random_field(const Input& input) {
    std::size_t width = std::size_t{2} << below(3);
    if (input.size() < width) return std::nullopt;
    return FieldAt{position(input.size() / width) * width, width, below(2) == 0};
  }

  static std::uint64_t load(const Input& input, const FieldAt& field) {
    std::uint64_t value = 0;
    for (std::size_t i = 0; i < field.width; ++i) {
      std::size_t shift = 8 * (field.little_endian ? i : field.width - 1 - i);
      value |= std::uint64_t{input[field.offset + i]} << shift;
    }
    return value;
  }

  static void store(Input& input, const FieldAt& field, std::uint64_t value) {
    for (std::size_t i = 0; i < field.width; ++i) {
      std::size_t shift = 8 * (field.little_endian ? i : field.width - 1 - i);
      input[field.offset + i] = static_cast<unsigned char>(value >> shift);
    }
  }

  // An interesting value (0, all ones, the largest signed, ...) in a 2, 4 or 8-byte field.
  void set_field(Input& input) {
    if (std::optional<FieldAt> field = random_field(input)) {
      store(input, *field, kInterestingValues[below(std::size(kInterestingValues))]);
    }
  }

  // A small step up or down: an offset or count that is off by a little.
  void add_to_field(Input& input) {
    if (std::optional<FieldAt> field = random_field(input)) {
      store(input, *field, load(input, *field) + below(33) - 16);
    }
  }

  void insert_bytes(Input& input) {
    std::size_t count =
        std::min<std::size_t>(1 + below(16), max_len_ - std::min(max_len_, input.size()));
    auto at = input.begin() + static_cast<std::ptrdiff_t>(position(input.size() + 1));
    bool repeated = below(2) == 0;
    auto byte = static_cast<unsigned char>(below(256));
    Input bytes(count);
    for (unsigned char& b : bytes) b = repeated ? byte : static_cast<unsigned char>(below(256));
    input.insert(at, bytes.begin(), bytes.end());
  }

  void erase_range(Input& input) {
    std::size_t from = position(input.size());
    std::size_t count = 1 + below(std::min<std::size_t>(64, input.size() - from));
    auto begin = input.begin() + static_cast<std::ptrdiff_t>(from);
    input.erase(begin, begin + static_cast<std::ptrdiff_t>(count));
  }

  // Overwrites a range with a copy of another range of the same input (offsets, names, headers).
  void copy_range(Input& input) {
    std::size_t from = below(input.size());
    std::size_t to = position(input.size());
    std::size_t count = 1 + below(std::min<std::size_t>(64, input.size() - std::max(from, to)));
    std::memmove(input.data() + to, input.data() + from, count);
  }

  static constexpr std::uint64_t kInterestingValues[] = {0,
                                                         1,
                                                         2,
                                                         0x7f,
                                                         0x80,
                                                         0xff,
                                                         0x100,
                                                         0x7fff,
                                                         0x8000,
                                                         0xffff,
                                                         0x10000,
                                                         0x7fffffff,
                                                         0x80000000,
                                                         0xffffffff,
                                                         0x100000000,
                                                         0x7fffffffffffffff,
                                                         0x8000000000000000,
                                                         ~std::uint64_t{0}};

  std::mt19937_64 random_;
  std::size_t max_len_;
};

// --- arguments and inputs ------------------------------------------------------------------------

const char* g_program = "fuzz_target";

[[noreturn]] void usage_error(const std::string& message) {
  (void)std::fprintf(stderr,
                     "standalone fuzz driver: %s\nusage: %s [-max_total_time=S] [-seed=N] "
                     "[-runs=N] [-max_len=N] [-timeout=S] [-artifact_prefix=P] FILE_OR_DIR...\n",
                     message.c_str(), g_program);
  std::exit(2);
}

std::uint64_t parse_number(std::string_view text, std::string_view option) {
  std::uint64_t value = 0;
  if (text.empty()) usage_error("empty value for " + std::string(option));
  for (char c : text) {
    if (c < '0' || c > '9') usage_error("not a number: " + std::string(option) + std::string(text));
    value = value * 10 + static_cast<std::uint64_t>(c - '0');
  }
  return value;
}

Options parse_arguments(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    auto value_of = [&](std::string_view option) -> std::optional<std::string_view> {
      if (!arg.starts_with(option)) return std::nullopt;
      return arg.substr(option.size());
    };
    if (auto v = value_of("-max_total_time=")) {
      options.max_total_time = static_cast<double>(parse_number(*v, "-max_total_time="));
    } else if (auto v = value_of("-seed=")) {
      options.seed = parse_number(*v, "-seed=");
    } else if (auto v = value_of("-runs=")) {
      options.runs = parse_number(*v, "-runs=");
    } else if (auto v = value_of("-max_len=")) {
      options.max_len = parse_number(*v, "-max_len=");
    } else if (auto v = value_of("-timeout=")) {
      options.timeout = static_cast<double>(parse_number(*v, "-timeout="));
    } else if (auto v = value_of("-artifact_prefix=")) {
      options.artifact_prefix = std::string(*v);
    } else if (arg.starts_with("-")) {
      usage_error("unknown option " + std::string(arg));
    } else {
      options.inputs.emplace_back(arg);
    }
  }
  return options;
}

Input read_input(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) usage_error("cannot read " + path.string());
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The inputs the arguments name: files as given, directories' regular files sorted by name.
std::vector<Input> read_seeds(const std::vector<std::string>& arguments) {
  std::vector<Input> seeds;
  for (const std::string& argument : arguments) {
    std::error_code ec;
    if (fs::is_directory(argument, ec)) {
      std::vector<fs::path> files;
      for (const fs::directory_entry& entry : fs::directory_iterator(argument)) {
        if (entry.is_regular_file()) files.push_back(entry.path());
      }
      std::sort(files.begin(), files.end());
      for (const fs::path& file : files) seeds.push_back(read_input(file));
    } else {
      seeds.push_back(read_input(argument));
    }
  }
  return seeds;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 0) g_program = argv[0];
  Options options = parse_arguments(argc, argv);
  install_crash_handlers(options);
  std::jthread watchdog = start_watchdog(options.timeout);
  Clock::time_point start = Clock::now();

  std::vector<Input> seeds = read_seeds(options.inputs);
  for (const Input& seed : seeds) run_one(seed);
  std::size_t given = seeds.size();
  if (seeds.empty()) seeds.emplace_back();  // mutations grow something from nothing

  std::size_t largest = 0;
  for (const Input& seed : seeds) largest = std::max(largest, seed.size());
  Mutator mutator(options.seed, options.max_len.value_or(std::max<std::size_t>(4096, largest)));
  auto deadline = start + std::chrono::duration_cast<Clock::duration>(
                              std::chrono::duration<double>(options.max_total_time));
  // Small seeds run faster: choosing by the inverse of the size gives each about the same time.
  std::vector<double> weights;
  for (const Input& seed : seeds) weights.push_back(1.0 / static_cast<double>(seed.size() + 1024));
  std::discrete_distribution<std::size_t> choose(weights.begin(), weights.end());
  std::uint64_t mutated = 0;
  while (Clock::now() < deadline && (!options.runs || mutated < *options.runs)) {
    Input input = seeds[mutator.pick(choose)];
    mutator.mutate(input);
    run_one(input);
    ++mutated;
  }
  double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  (void)std::printf(
      "standalone fuzz driver: ran %llu inputs (%zu given, %llu mutated) in %.1fs, seed %llu\n",
      static_cast<unsigned long long>(given) + mutated, given,
      static_cast<unsigned long long>(mutated), seconds,
      static_cast<unsigned long long>(options.seed));
  return 0;
}
