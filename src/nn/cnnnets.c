/* cnnnets.c -- the named nets of the sweeps' model.net as layer lists
 * (cnn.h; shapes from ../shared/docs/cnn.md and the seeds):
 *   cnn / cnn5  the generic stack (003's L-layer CNN is L - 1 convs + flatten
 *               + dense readout; cnn5 fixes L = 5)
 *   myrtle5     neural-tangents' MyrtleNetwork(5): layer factors [2, 1, 1],
 *               five 2 x 2 average pools, flatten, dense
 *   tf_mnist    TensorFlow's "Deep MNIST" tutorial CNN (002, Fig. 5 right)
 *   wrn         Zagoruyko & Komodakis' WRN-d-k, pre-activation blocks, no
 *               BatchNorm (003 says nothing of BN with the NTK scaling)
 *   dag         003's DenseNet-DAG with randomly dropped edges (Eq. A.5-A.6,
 *               App. A.1, Fig. 2.2): flatten, one dag block, dense readout
 *               (masked as the block with dag_readout_drop > 0) */
#include <stdio.h>

#include "dynsweep/cnn.h"

const char *const ds_cnn_net_names[DS_NET_NKINDS + 1] = {"cnn", "cnn5", "myrtle5", "tf_mnist",
                                                         "wrn", "dag", NULL};

static ds_cnn_layer conv(int c, int s, int t, int same) {
  return (ds_cnn_layer){.kind = DS_LAYER_CONV, .cout = c, .size = s, .stride = t, .same = same};
}
static ds_cnn_layer kind(int k) { return (ds_cnn_layer){.kind = k}; }
static ds_cnn_layer pool(int k, int w) { return (ds_cnn_layer){.kind = k, .size = w, .stride = w}; }

/* The generic keys a fixed net does not read, when off their defaults. */
static const char *generic_key(const ds_cnn_net *n) {
  if (n->kernel != 3) return "model.kernel";
  if (n->stride != 1) return "model.stride";
  if (!n->same) return "model.padding";
  if (n->readout != DS_CNN_FLATTEN) return "model.readout";
  if (n->pool) return "model.pool";
  if (n->pool_every != 1) return "model.pool_every";
  if (n->pool_size != 2) return "model.pool_size";
  if (n->hidden) return "model.hidden";
  return NULL;
}

int ds_cnn_net_layers(const ds_cnn_net *n, ds_cnn_layer *L, char *err, size_t errlen) {
  char dummy[8];
  if (!err) err = dummy, errlen = sizeof dummy;
  if (n->net < 0 || n->net >= DS_NET_NKINDS || n->width < 1 || n->depth < 1) {
    snprintf(err, errlen, "model.net: unknown net %d, or width / depth < 1", n->net);
    return -1;
  }
  const char *name = ds_cnn_net_names[n->net], *key;
  static const int own_depth[DS_NET_NKINDS] = {0, 4, 4, 2, 0, 0};
  if (n->net >= DS_NET_MYRTLE5 && (key = generic_key(n))) {
    snprintf(err, errlen, "model.net %s fixes its layers; %s applies to model.net cnn or cnn5",
             name, key);
    return -1;
  }
  if (own_depth[n->net] && n->depth != 2 && n->depth != own_depth[n->net]) {
    snprintf(err, errlen, "model.net %s has %d conv layers; model.depth %d would be ignored "
             "(leave it out, or use model.net cnn)", name, own_depth[n->net], n->depth);
    return -1;
  }
  if (n->net == DS_NET_DAG && !(n->dag_drop >= 0.0 && n->dag_drop < 1.0)) {
    snprintf(err, errlen, "model.dag_drop %g: the edge drop probability must be in [0, 1) "
             "(003 Fig. 2.2: 0.5)", n->dag_drop);
    return -1;
  }
  if (n->net == DS_NET_DAG && !(n->dag_readout_drop >= 0.0 && n->dag_readout_drop < 1.0)) {
    snprintf(err, errlen, "model.dag_readout_drop %g: the readout's edge drop probability must "
             "be in [0, 1) (0: the readout unmasked)", n->dag_readout_drop);
    return -1;
  }
  if ((n->net == DS_NET_MYRTLE5 || n->net == DS_NET_DAG) && n->dropout != 0.0) {
    snprintf(err, errlen, "model.net %s has no dropout; model.dropout applies to cnn, cnn5 "
             "and tf_mnist (dag's edges are dropped once: model.dag_drop)", name);
    return -1;
  }
  if (n->overparam && (n->net != DS_NET_TF_MNIST || n->dout < 1)) {
    snprintf(err, errlen, "model.overparam applies to model.net tf_mnist (002's factored dense "
             "layers), not %s", name);
    return -1;
  }
  if (!(n->dropout >= 0.0 && n->dropout < 1.0) || n->pool_every < 1 || n->pool_size < 1 ||
      n->hidden < 0) {
    snprintf(err, errlen, "model.net %s: dropout in [0, 1), pool_every and pool_size >= 1, "
             "hidden >= 0", name);
    return -1;
  }
  const int C = n->width;
  int k = 0;
  switch (n->net) {
  case DS_NET_CNN:
  case DS_NET_CNN5: {
    int depth = n->net == DS_NET_CNN5 ? 4 : n->depth;
    if (depth * 3 + 5 > DS_CNN_MAX_LAYERS) {
      snprintf(err, errlen, "model.depth %d: too many layers", depth);
      return -1;
    }
    for (int l = 0; l < depth; l++) {
      L[k++] = conv(C, n->kernel, n->stride, n->same);
      L[k++] = kind(DS_LAYER_RELU);
      if (n->pool && (l + 1) % n->pool_every == 0) L[k++] = pool(n->pool, n->pool_size);
    }
    L[k++] = kind(n->readout == DS_CNN_GAP ? DS_LAYER_GAP : DS_LAYER_FLATTEN);
    if (n->hidden) {
      L[k++] = (ds_cnn_layer){.kind = DS_LAYER_DENSE, .cout = n->hidden};
      L[k++] = kind(DS_LAYER_RELU);
    }
    break;
  }
  case DS_NET_MYRTLE5: {
    static const int factor[3] = {2, 1, 1}; /* convs before each pool group */
    for (int g = 0; g < 3; g++) {
      for (int r = 0; r < factor[g]; r++) L[k++] = conv(C, 3, 1, 1), L[k++] = kind(DS_LAYER_RELU);
      for (int r = 0; r < (g == 2 ? 3 : 1); r++) L[k++] = pool(DS_LAYER_AVGPOOL, 2);
    }
    L[k++] = kind(DS_LAYER_FLATTEN);
    break;
  }
  case DS_NET_TF_MNIST:
    L[k++] = conv(C, 5, 1, 1), L[k++] = kind(DS_LAYER_RELU), L[k++] = pool(DS_LAYER_MAXPOOL, 2);
    L[k++] = conv(2 * C, 5, 1, 1), L[k++] = kind(DS_LAYER_RELU);
    L[k++] = pool(DS_LAYER_MAXPOOL, 2);
    L[k++] = kind(DS_LAYER_FLATTEN);
    if (n->overparam) /* W2 W1 a + b: W1 without a bias */
      L[k++] = (ds_cnn_layer){.kind = DS_LAYER_DENSE, .cout = 16 * C, .nobias = 1};
    L[k++] = (ds_cnn_layer){.kind = DS_LAYER_DENSE, .cout = 16 * C};
    L[k++] = kind(DS_LAYER_RELU);
    break;
  case DS_NET_WRN: {
    if (n->depth < 10 || (n->depth - 4) % 6) {
      snprintf(err, errlen, "model.net wrn: model.depth is the WRN depth d = 6 N + 4 (10, 16, "
               "22, ...), got %d", n->depth);
      return -1;
    }
    int N = (n->depth - 4) / 6;
    if (3 * N + 4 > DS_CNN_MAX_LAYERS) {
      snprintf(err, errlen, "model.net wrn: depth %d: too many layers", n->depth);
      return -1;
    }
    L[k++] = conv(16, 3, 1, 1);
    for (int g = 0; g < 3; g++)
      for (int b = 0; b < N; b++)
        L[k++] = (ds_cnn_layer){.kind = DS_LAYER_RESBLOCK, .cout = (16 * C) << g, .size = 3,
                                .stride = (b == 0 && g > 0) ? 2 : 1, .same = 1};
    L[k++] = kind(DS_LAYER_RELU);
    L[k++] = kind(DS_LAYER_GAP);
    break;
  }
  case DS_NET_DAG:
    L[k++] = kind(DS_LAYER_FLATTEN);
    L[k++] = (ds_cnn_layer){.kind = DS_LAYER_DAG, .cout = C, .depth = n->depth, .p = n->dag_drop,
                            .rdrop = n->dag_readout_drop};
    break;
  }
  if (n->dropout > 0.0 && n->net != DS_NET_WRN)
    L[k++] = (ds_cnn_layer){.kind = DS_LAYER_DROPOUT, .p = n->dropout};
  if (n->overparam) /* the readout's first factor */
    L[k++] = (ds_cnn_layer){.kind = DS_LAYER_DENSE, .cout = n->dout, .nobias = 1};
  if (n->net == DS_NET_WRN && n->dropout > 0.0) {
    snprintf(err, errlen, "model.net wrn has no dropout here (WRN's dropout sits inside the "
             "blocks); model.dropout applies to cnn, cnn5 and tf_mnist");
    return -1;
  }
  return k;
}
