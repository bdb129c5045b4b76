/* text.c -- the reference listings' text: `dynsweep keys` (config/keys.c)
 * and `dynsweep version --knobs` (util/knobs.c) print their tables so. */
#include "dynsweep/util.h"

/* Text indented by 4, wrapped at 78 columns (a terminal of 80). */
void ds_print_wrapped(FILE *f, const char *s) {
  int col = 0;
  while (*s) {
    const char *e = s;
    while (*e && *e != ' ') e++;
    int w = (int)(e - s);
    if (col > 0 && col + 1 + w > 74) fputc('\n', f), col = 0;
    fprintf(f, "%s%.*s", col ? " " : "    ", w, s);
    col += w + 1;
    s = *e ? e + 1 : e;
  }
  fputc('\n', f);
}

void ds_print_md_cell(FILE *f, const char *s) { /* a table cell: | escaped */
  for (; *s; s++) {
    if (*s == '|') fputs("\\|", f);
    else fputc(*s, f);
  }
}
