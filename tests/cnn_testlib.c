/* cnn_testlib.c -- see cnn_testlib.h. */
#include "cnn_testlib.h"

#include <stdlib.h>
#include <string.h>

#include "check.h"

ds_cnn_net net_of(const lspec *sp) {
  return (ds_cnn_net){.net = sp->net, .width = sp->width, .depth = sp->depth, .kernel = 3,
                      .stride = 1, .same = 1, .readout = DS_CNN_FLATTEN, .pool_every = 1,
                      .pool_size = 2, .dropout = sp->p, .overparam = sp->over,
                      .dout = sp->dout, .dag_drop = 0.5};
}

ds_cnn *lcreate(const lspec *sp, int n, ds_cnn_layer *L, int *nl) {
  char err[256] = "";
  *nl = sp->nl;
  memcpy(L, sp->L, sizeof sp->L);
  if (sp->net >= 0) {
    ds_cnn_net nt = net_of(sp);
    *nl = ds_cnn_net_layers(&nt, L, err, sizeof err);
    CHECK(*nl > 0, "%s: layers: %s", sp->name, err);
    if (*nl <= 0) return NULL;
  }
  ds_cnn *m = ds_cnn_create_layers(L, *nl, sp->c0, sp->h0, sp->w0, sp->dout, sp->param,
                                   sp->beta, n, err, sizeof err);
  CHECK(m != NULL, "%s: create: %s", sp->name, err);
  return m;
}

void randn(double *x, size_t n, ds_rng *r) {
  for (size_t i = 0; i < n; i++) x[i] = ds_rng_normal(r);
}

void onehot(double *Y, int dout, int n, int k) {
  memset(Y, 0, (size_t)dout * n * sizeof *Y);
  for (int i = 0; i < n; i++) Y[(size_t)i * dout + (i + k) % dout] = 1.0;
}

void dump_head(FILE *f, const lspec *sp, const ds_cnn_layer *L, int nl, int n, int steps,
               int ntest, double lr) {
  int rmask = nl > 0 && L[nl - 1].kind == DS_LAYER_DAG && L[nl - 1].rdrop > 0.0;
  int hdr[10] = {nl, sp->c0, sp->h0, sp->w0, sp->dout, sp->param, n, steps, ntest, rmask};
  double hd[2] = {sp->beta, lr};
  fwrite(hdr, sizeof hdr, 1, f), fwrite(hd, sizeof hd, 1, f);
  for (int l = 0; l < nl; l++) {
    int size = L[l].kind == DS_LAYER_DAG ? L[l].depth : L[l].size; /* dag: its depth */
    int li[6] = {L[l].kind, L[l].cout, size, L[l].stride, L[l].same, L[l].nobias};
    fwrite(li, sizeof li, 1, f), fwrite(&L[l].p, 8, 1, f);
  }
}

void dump_masks(FILE *f, ds_cnn *m, const ds_cnn_layer *L, int nl, int n, int steps,
                uint64_t seed) {
  for (int s = 0; s <= steps; s++)
    for (int q = 0; q < nl; q++)
      if (L[q].kind == DS_LAYER_DROPOUT) {
        int c, h, w;
        ds_cnn_layer_shape(m, q, &c, &h, &w);
        size_t u = (size_t)c * h * w;
        double *mask = malloc(u * n * 8);
        ds_dropout_mask(mask, u, n, L[q].p, seed, (uint64_t)s, NULL, q);
        fwrite(mask, 8, u * n, f);
        free(mask);
      }
}
