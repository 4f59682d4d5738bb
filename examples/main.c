/* An executable linked against the static library built from tarred objects. */
#include <stdio.h>

int add(int a, int b);
int mul(int a, int b);

int main(void) {
  printf("%d\n", add(mul(6, 7), 0));
  return add(2, 2) == 4 ? 0 : 1;
}
