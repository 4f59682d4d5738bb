/* The smallest program worth spawning: statically linked, exits at once. */
int main(void) { return 0; }
