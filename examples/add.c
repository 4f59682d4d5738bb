/* A generated-kernel stand-in: the C library of the examples. */
int add(int a, int b) { return a + b; }
