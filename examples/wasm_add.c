/* A WebAssembly module exporting add. */
__attribute__((export_name("add"))) int add(int a, int b) { return a + b; }
