// Declares what vec.cc exports (kiln build's cache also hashes this header: change it and
// "vec" is rebuilt).
#pragma once
extern "C" double dot(const double* a, const double* b, int n);
