// Compiled as part of the base layer by the test layers.upward_include_is_refused, which passes
// only when this fails to compile because base cannot see the builder's header. (.cpp, so that
// the lint tests, which take every .cc, leave this deliberately broken file alone.)
#include "kiln/build.h"

int kiln_layer_violation() { return 0; }
