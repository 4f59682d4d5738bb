// Uses an installed kiln: runs a tool, keeps its output in a temp directory, prints the version.
#include <fstream>
#include <iostream>

#include <kiln/libinfo.h>
#include <kiln/process.h>
#include <kiln/temp_directory.h>

int main() {
  kiln::TempDirectory tmp;
  kiln::RunResult r =
      kiln::run({.argv = {"/bin/echo", "consumer ok"}, .timeout = std::chrono::seconds(5)});
  std::ofstream(tmp / "out.txt") << r.output;
  std::cout << r.output << "kiln " << kiln::describe().version << " from " << tmp.listdir().front()
            << "\n";
  return r.ok() ? 0 : 1;
}
