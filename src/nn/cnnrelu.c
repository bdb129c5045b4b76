/* cnnrelu.c -- the ReLUs of a ds_cnn and their last forward pass's maps
 * (cnn.h's ds_cnn_nrelus, ds_cnn_relu_map), for the activation spectra of
 * record.spectra.activations (src/diag/cnnact.c). A net's ReLUs, in forward
 * order: each DS_LAYER_RELU layer (input: the previous layer's output, or X
 * for the first layer), the two of each residual block (r = relu(x) and
 * relu(z1), z1 its first conv's output) and each depth k of a DAG block
 * (f_k = relu(pre_k)). Nothing is computed here: the maps are the buffers
 * the forward pass keeps (cnn_internal.h). */
#include "dynsweep/cnn.h"

#include "cnn_internal.h"

static int nrelu(const ds_cnn_ly *y) {
  switch (y->L.kind) {
  case DS_LAYER_RELU: return 1;
  case DS_LAYER_RESBLOCK: return 2;
  case DS_LAYER_DAG: return y->ndag;
  default: return 0;
  }
}

int ds_cnn_nrelus(const ds_cnn *m) {
  int count = 0;
  for (int l = 0; l < m->nl; l++) count += nrelu(&m->ly[l]);
  return count;
}

int ds_cnn_relu_map(const ds_cnn *m, int j, const double *X, ds_cnn_relu *r) {
  for (int l = 0; l < m->nl; l++) {
    const ds_cnn_ly *y = &m->ly[l];
    int c = nrelu(y);
    if (j >= c) {
      j -= c;
      continue;
    }
    const double *x = l ? m->ly[l - 1].y : X; /* the layer's input */
    r->layer = l, r->kind = y->L.kind, r->part = j;
    switch (y->L.kind) {
    case DS_LAYER_RELU:
      r->c = y->cout, r->h = y->hout, r->w = y->wout;
      r->d = (int)y->dout;
      r->Z = x, r->A = y->out, r->ldz = r->lda = y->dout;
      break;
    case DS_LAYER_RESBLOCK:
      if (j == 0) { /* r = relu(x), the block's input map */
        r->c = y->cin, r->h = y->hin, r->w = y->win;
        r->d = (int)y->din;
        r->Z = x, r->A = y->r, r->ldz = r->lda = y->din;
      } else { /* relu(z1) */
        r->c = y->cout, r->h = y->hout, r->w = y->wout;
        r->d = (int)y->dout;
        r->Z = y->z1, r->A = y->a1, r->ldz = r->lda = y->dout;
      }
      break;
    default: { /* DS_LAYER_DAG, depth j: pre (depth m per sample), out (T per sample) */
      const size_t mm = (size_t)y->L.cout;
      r->c = y->L.cout, r->h = r->w = 1;
      r->d = y->L.cout;
      r->Z = y->pre + (size_t)j * mm, r->ldz = (size_t)y->ndag * mm;
      r->A = y->out + y->din + (size_t)j * mm, r->lda = y->dout;
      break;
    }
    }
    return DS_OK;
  }
  return DS_EINPUT;
}
