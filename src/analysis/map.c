/* map.c -- `dynsweep map`: a trainability map as an image. The drawing is
 * Python's (tools/dynsweep-map: matplotlib, the study's colour scale and the
 * box-counting dimension in python/dynsweep/maps.py), so this command runs it
 * under Debian's interpreter, the way git runs its helper programs. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dynsweep/knobs.h"
#include "dynsweep/analysis.h"

#ifndef DS_TOOLS_DIR
#define DS_TOOLS_DIR "tools"
#endif
#define DS_PYTHON "/usr/bin/python3"

int ds_cli_map(int argc, char **argv) {
  const char *dir = ds_knob_str(DS_KNOB_TOOLS);
  char tool[4096];
  snprintf(tool, sizeof tool, "%s/dynsweep-map", dir && *dir ? dir : DS_TOOLS_DIR);
  if (access(tool, R_OK) != 0) {
    fprintf(stderr, "dynsweep: map: cannot find %s (%s); set DYNSWEEP_TOOLS to the tools/ "
            "directory of the source tree\n", tool, strerror(errno));
    return 1;
  }
  if (access(DS_PYTHON, X_OK) != 0) {
    fprintf(stderr, "dynsweep: map: needs %s with python3-h5py, python3-numpy, python3-yaml and "
            "python3-matplotlib (apt-get install python3-h5py python3-numpy python3-yaml "
            "python3-matplotlib)\n", DS_PYTHON);
    return 1;
  }
  char **av = calloc((size_t)argc + 3, sizeof *av);
  if (!av) return 1;
  av[0] = (char *)DS_PYTHON;
  av[1] = tool;
  for (int i = 0; i < argc; i++) av[i + 2] = argv[i];
  fflush(stdout);
  execv(DS_PYTHON, av);
  fprintf(stderr, "dynsweep: map: cannot run %s %s: %s\n", DS_PYTHON, tool, strerror(errno));
  free(av);
  return 1;
}
