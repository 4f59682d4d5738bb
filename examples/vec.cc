// The C++ library of the examples.
#include <numeric>
#include <vector>

#include "vec.h"

extern "C" double dot(const double* a, const double* b, int n) {
  std::vector<double> x(a, a + n);
  std::vector<double> y(b, b + n);
  return std::inner_product(x.begin(), x.end(), y.begin(), 0.0);
}
