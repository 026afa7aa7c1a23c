"""hwport as Paddle: `import hwport as paddle` runs Paddle 3 code unchanged for the ops the
library has. Every audited function's parameters are checked against a recorded copy of
paddlepaddle 3.3.1's signatures (PADDLE_3_3_1 below, written out by inspect.signature in a
separate venv: paddle is never a dependency), with the deliberate differences listed in
DIFFERENCES and docs/paddle-compat.md; behaviour is checked against numpy (and torch where
installed)."""

from __future__ import annotations

import inspect
import operator
import re
from pathlib import Path

import numpy as np
import pytest

import hwport
import hwport as paddle
import hwport.nn.functional as F

# (name, kind, default): kind pos = positional-or-keyword, kw = keyword-only, var = *args;
# '<required>' = no default.
PADDLE_3_3_1 = {'softmax': [('input', 'pos', '<required>'), ('dim', 'pos', None),
             ('dtype', 'pos', None), ('out', 'kw', None)],
 'Tensor.softmax': [('input', 'pos', '<required>'), ('dim', 'pos', None), ('dtype', 'pos', None),
                    ('out', 'kw', None)],
'chunk': [('x', 'pos', '<required>'), ('chunks', 'pos', '<required>'),
           ('axis', 'pos', 0), ('name', 'pos', None)],
 'Tensor.chunk': [('x', 'pos', '<required>'), ('chunks', 'pos', '<required>'),
                  ('axis', 'pos', 0), ('name', 'pos', None)],
'Tensor.astype': [('self', 'pos', '<required>'), ('dtype', 'pos', '<required>')],
 'Tensor.cast': [('x', 'pos', '<required>'), ('dtype', 'pos', '<required>')],
 'Tensor.clone': [('self', 'pos', '<required>')],
 'Tensor.dim': [('var', 'pos', '<required>')],
 'Tensor.flatten': [('x', 'pos', '<required>'), ('start_axis', 'pos', 0), ('stop_axis', 'pos', -1),
                    ('name', 'pos', None)],
 'Tensor.item': [('self', 'pos', '<required>'), ('args', 'var', '<required>')],
 'Tensor.matmul': [('x', 'pos', '<required>'), ('y', 'pos', '<required>'),
                   ('transpose_x', 'pos', False), ('transpose_y', 'pos', False),
                   ('name', 'pos', None), ('out', 'kw', None)],
 'Tensor.max': [('x', 'pos', '<required>'), ('axis', 'pos', None), ('keepdim', 'pos', False),
                ('name', 'pos', None)],
 'Tensor.mean': [('x', 'pos', '<required>'), ('axis', 'pos', None), ('keepdim', 'pos', False),
                 ('name', 'pos', None), ('dtype', 'kw', None), ('out', 'kw', None)],
 'Tensor.min': [('x', 'pos', '<required>'), ('axis', 'pos', None), ('keepdim', 'pos', False),
                ('name', 'pos', None)],
 'Tensor.numel': [('x', 'pos', '<required>'), ('name', 'pos', None)],
 'Tensor.pow': [('x', 'pos', '<required>'), ('y', 'pos', '<required>'), ('name', 'pos', None),
                ('out', 'kw', None)],
 'Tensor.reshape': [('x', 'pos', '<required>'), ('shape', 'pos', '<required>'),
                    ('name', 'pos', None)],
 'Tensor.split': [('x', 'pos', '<required>'), ('num_or_sections', 'pos', '<required>'),
                  ('axis', 'pos', 0), ('name', 'pos', None)],
 'Tensor.squeeze': [('x', 'pos', '<required>'), ('axis', 'pos', None), ('name', 'pos', None)],
 'Tensor.sum': [('x', 'pos', '<required>'), ('axis', 'pos', None), ('dtype', 'pos', None),
                ('keepdim', 'pos', False), ('name', 'pos', None), ('out', 'kw', None)],
 'Tensor.t': [('input', 'pos', '<required>'), ('name', 'pos', None)],
 'Tensor.tolist': [('x', 'pos', '<required>')],
 'Tensor.transpose': [('x', 'pos', '<required>'), ('perm', 'pos', '<required>'),
                      ('name', 'pos', None)],
 'Tensor.unsqueeze': [('x', 'pos', '<required>'), ('axis', 'pos', '<required>'),
                      ('name', 'pos', None)],
 'abs': [('x', 'pos', '<required>'), ('name', 'pos', None), ('out', 'kw', None)],
 'add': [('x', 'pos', '<required>'), ('y', 'pos', '<required>'), ('name', 'pos', None),
         ('alpha', 'kw', 1), ('out', 'kw', None)],
 'all': [('x', 'pos', '<required>'), ('axis', 'pos', None), ('keepdim', 'pos', False),
         ('name', 'pos', None), ('out', 'kw', None)],
 'any': [('x', 'pos', '<required>'), ('axis', 'pos', None), ('keepdim', 'pos', False),
         ('name', 'pos', None), ('out', 'kw', None)],
 'arange': [('start', 'pos', 0), ('end', 'pos', None), ('step', 'pos', 1), ('dtype', 'pos', None),
            ('out', 'kw', None), ('device', 'kw', None), ('requires_grad', 'kw', False),
            ('pin_memory', 'kw', False), ('name', 'kw', None)],
 'argmax': [('x', 'pos', '<required>'), ('axis', 'pos', None), ('keepdim', 'pos', False),
            ('dtype', 'pos', 'int64'), ('name', 'pos', None)],
 'argmin': [('x', 'pos', '<required>'), ('axis', 'pos', None), ('keepdim', 'pos', False),
            ('dtype', 'pos', 'int64'), ('name', 'pos', None)],
 'argsort': [('x', 'pos', '<required>'), ('axis', 'pos', -1), ('descending', 'pos', False),
             ('stable', 'pos', False), ('name', 'pos', None)],
 'bitwise_and': [('x', 'pos', '<required>'), ('y', 'pos', '<required>'), ('out', 'pos', None),
                 ('name', 'pos', None)],
 'bitwise_not': [('x', 'pos', '<required>'), ('out', 'pos', None), ('name', 'pos', None)],
 'bitwise_or': [('x', 'pos', '<required>'), ('y', 'pos', '<required>'), ('out', 'pos', None),
                ('name', 'pos', None)],
 'bitwise_xor': [('x', 'pos', '<required>'), ('y', 'pos', '<required>'), ('out', 'pos', None),
                 ('name', 'pos', None)],
 'broadcast_to': [('x', 'pos', '<required>'), ('shape', 'pos', '<required>'),
                  ('name', 'pos', None)],
 'cast': [('x', 'pos', '<required>'), ('dtype', 'pos', '<required>')],
 'ceil': [('x', 'pos', '<required>'), ('name', 'pos', None), ('out', 'kw', None)],
 'clip': [('x', 'pos', '<required>'), ('min', 'pos', None), ('max', 'pos', None),
          ('name', 'pos', None), ('out', 'kw', None)],
 'clone': [('x', 'pos', '<required>'), ('name', 'pos', None)],
 'concat': [('x', 'pos', '<required>'), ('axis', 'pos', 0), ('name', 'pos', None),
            ('out', 'kw', None)],
 'cos': [('x', 'pos', '<required>'), ('name', 'pos', None), ('out', 'kw', None)],
 'cumprod': [('x', 'pos', '<required>'), ('dim', 'pos', None), ('dtype', 'kw', None),
             ('out', 'kw', None), ('name', 'kw', None)],
 'cumsum': [('x', 'pos', '<required>'), ('axis', 'pos', None), ('dtype', 'pos', None),
            ('name', 'pos', None), ('out', 'kw', None)],
 'divide': [('x', 'pos', '<required>'), ('y', 'pos', '<required>'), ('name', 'pos', None),
            ('rounding_mode', 'kw', None), ('out', 'kw', None)],
 'equal': [('x', 'pos', '<required>'), ('y', 'pos', '<required>'), ('name', 'pos', None),
           ('out', 'kw', None)],
 'erf': [('x', 'pos', '<required>'), ('name', 'pos', None)],
 'exp': [('x', 'pos', '<required>'), ('name', 'pos', None), ('out', 'kw', None)],
 'expand': [('x', 'pos', '<required>'), ('shape', 'pos', '<required>'), ('name', 'pos', None)],
 'expm1': [('x', 'pos', '<required>'), ('name', 'pos', None), ('out', 'kw', None)],
 'eye': [('num_rows', 'pos', '<required>'), ('num_columns', 'pos', None), ('dtype', 'pos', None),
         ('name', 'pos', None), ('out', 'kw', None), ('device', 'kw', None),
         ('requires_grad', 'kw', False), ('pin_memory', 'kw', False)],
 'flatten': [('x', 'pos', '<required>'), ('start_axis', 'pos', 0), ('stop_axis', 'pos', -1),
             ('name', 'pos', None)],
 'flip': [('x', 'pos', '<required>'), ('axis', 'pos', '<required>'), ('name', 'pos', None)],
 'floor': [('x', 'pos', '<required>'), ('name', 'pos', None), ('out', 'kw', None)],
 'floor_divide': [('x', 'pos', '<required>'), ('y', 'pos', '<required>'), ('name', 'pos', None),
                  ('out', 'kw', None)],
 'full': [('shape', 'pos', '<required>'), ('fill_value', 'pos', '<required>'),
          ('dtype', 'pos', None), ('name', 'pos', None), ('out', 'kw', None),
          ('device', 'kw', None), ('requires_grad', 'kw', False), ('pin_memory', 'kw', False)],
 'full_like': [('x', 'pos', '<required>'), ('fill_value', 'pos', '<required>'),
               ('dtype', 'pos', None), ('name', 'pos', None), ('device', 'kw', None),
               ('requires_grad', 'kw', False), ('pin_memory', 'kw', False)],
 'gather': [('x', 'pos', '<required>'), ('index', 'pos', '<required>'), ('axis', 'pos', None),
            ('name', 'pos', None), ('out', 'pos', None)],
 'get_default_dtype': [],
 'get_device': [('input', 'pos', None)],
 'greater_equal': [('x', 'pos', '<required>'), ('y', 'pos', '<required>'), ('name', 'pos', None),
                   ('out', 'kw', None)],
 'greater_than': [('x', 'pos', '<required>'), ('y', 'pos', '<required>'), ('name', 'pos', None),
                  ('out', 'kw', None)],
 'index_select': [('x', 'pos', '<required>'), ('index', 'pos', '<required>'), ('axis', 'pos', 0),
                  ('name', 'pos', None), ('out', 'kw', None)],
 'is_tensor': [('x', 'pos', '<required>')],
 'isfinite': [('x', 'pos', '<required>'), ('name', 'pos', None)],
 'isinf': [('x', 'pos', '<required>'), ('name', 'pos', None)],
 'isnan': [('x', 'pos', '<required>'), ('name', 'pos', None)],
 'less_equal': [('x', 'pos', '<required>'), ('y', 'pos', '<required>'), ('name', 'pos', None),
                ('out', 'kw', None)],
 'less_than': [('x', 'pos', '<required>'), ('y', 'pos', '<required>'), ('name', 'pos', None),
               ('out', 'kw', None)],
 'linspace': [('start', 'pos', '<required>'), ('stop', 'pos', '<required>'),
              ('num', 'pos', '<required>'), ('dtype', 'pos', None), ('name', 'pos', None),
              ('out', 'kw', None), ('device', 'kw', None), ('requires_grad', 'kw', False)],
 'log': [('x', 'pos', '<required>'), ('name', 'pos', None), ('out', 'kw', None)],
 'log1p': [('x', 'pos', '<required>'), ('name', 'pos', None), ('out', 'kw', None)],
 'log2': [('x', 'pos', '<required>'), ('name', 'pos', None), ('out', 'kw', None)],
 'logical_and': [('x', 'pos', '<required>'), ('y', 'pos', '<required>'), ('name', 'pos', None),
                 ('out', 'kw', None)],
 'logical_not': [('x', 'pos', '<required>'), ('name', 'pos', None), ('out', 'kw', None)],
 'logical_or': [('x', 'pos', '<required>'), ('y', 'pos', '<required>'), ('name', 'pos', None),
                ('out', 'kw', None)],
 'logical_xor': [('x', 'pos', '<required>'), ('y', 'pos', '<required>'), ('name', 'pos', None),
                 ('out', 'kw', None)],
 'logsumexp': [('x', 'pos', '<required>'), ('axis', 'pos', None), ('keepdim', 'pos', False),
               ('name', 'pos', None), ('out', 'kw', None)],
 'matmul': [('x', 'pos', '<required>'), ('y', 'pos', '<required>'), ('transpose_x', 'pos', False),
            ('transpose_y', 'pos', False), ('name', 'pos', None), ('out', 'kw', None)],
 'max': [('x', 'pos', '<required>'), ('axis', 'pos', None), ('keepdim', 'pos', False),
         ('name', 'pos', None)],
 'maximum': [('x', 'pos', '<required>'), ('y', 'pos', '<required>'), ('name', 'pos', None),
             ('out', 'kw', None)],
 'mean': [('x', 'pos', '<required>'), ('axis', 'pos', None), ('keepdim', 'pos', False),
          ('name', 'pos', None), ('dtype', 'kw', None), ('out', 'kw', None)],
 'min': [('x', 'pos', '<required>'), ('axis', 'pos', None), ('keepdim', 'pos', False),
         ('name', 'pos', None)],
 'minimum': [('x', 'pos', '<required>'), ('y', 'pos', '<required>'), ('name', 'pos', None),
             ('out', 'kw', None)],
 'multiply': [('x', 'pos', '<required>'), ('y', 'pos', '<required>'), ('name', 'pos', None),
              ('out', 'kw', None)],
 'neg': [('x', 'pos', '<required>'), ('name', 'pos', None)],
 'nn.functional.cross_entropy': [('input', 'pos', '<required>'), ('label', 'pos', '<required>'),
                                 ('weight', 'pos', None), ('ignore_index', 'pos', -100),
                                 ('reduction', 'pos', 'mean'), ('soft_label', 'pos', False),
                                 ('axis', 'pos', -1), ('use_softmax', 'pos', True),
                                 ('label_smoothing', 'pos', 0.0), ('name', 'pos', None)],
 'nn.functional.dropout': [('x', 'pos', '<required>'), ('p', 'pos', 0.5), ('axis', 'pos', None),
                           ('training', 'pos', True), ('inplace', 'pos', False),
                           ('mode', 'pos', 'upscale_in_train'), ('name', 'pos', None)],
 'nn.functional.embedding': [('x', 'pos', '<required>'), ('weight', 'pos', '<required>'),
                             ('padding_idx', 'pos', None), ('max_norm', 'pos', None),
                             ('norm_type', 'pos', 2.0), ('sparse', 'pos', False),
                             ('scale_grad_by_freq', 'pos', False), ('name', 'pos', None)],
 'nn.functional.gelu': [('x', 'pos', '<required>'), ('approximate', 'pos', False),
                        ('name', 'pos', None)],
 'nn.functional.layer_norm': [('x', 'pos', '<required>'), ('normalized_shape', 'pos', '<required>'),
                              ('weight', 'pos', None), ('bias', 'pos', None),
                              ('epsilon', 'pos', 1e-05), ('name', 'pos', None)],
 'nn.functional.linear': [('x', 'pos', '<required>'), ('weight', 'pos', '<required>'),
                          ('bias', 'pos', None), ('name', 'pos', None)],
 'nn.functional.log_softmax': [('x', 'pos', '<required>'), ('axis', 'pos', -1),
                               ('dtype', 'pos', None), ('name', 'pos', None)],
 'nn.functional.pad': [('x', 'pos', '<required>'), ('pad', 'pos', '<required>'),
                       ('mode', 'pos', 'constant'), ('value', 'pos', 0.0),
                       ('data_format', 'pos', None), ('pad_from_left_axis', 'pos', True),
                       ('name', 'pos', None)],
 'nn.functional.relu': [('x', 'pos', '<required>'), ('name', 'pos', None)],
 'nn.functional.rms_norm': [('input', 'pos', '<required>'),
                            ('normalized_shape', 'pos', '<required>'), ('weight', 'pos', None),
                            ('eps', 'pos', 1e-05), ('name', 'pos', None)],
 'compat.nn.functional.scaled_dot_product_attention': [('query', 'pos', '<required>'),
    ('key', 'pos', '<required>'), ('value', 'pos', '<required>'), ('attn_mask', 'pos', None),
    ('dropout_p', 'pos', 0.0), ('is_causal', 'pos', False), ('scale', 'pos', None),
    ('enable_gqa', 'pos', False)],
 'nn.functional.scaled_dot_product_attention': [('query', 'pos', '<required>'),
                                                ('key', 'pos', '<required>'),
                                                ('value', 'pos', '<required>'),
                                                ('attn_mask', 'pos', None),
                                                ('dropout_p', 'pos', 0.0),
                                                ('is_causal', 'pos', False),
                                                ('training', 'pos', True), ('backend', 'pos', None),
                                                ('scale', 'pos', None), ('enable_gqa', 'pos', True),
                                                ('name', 'pos', None)],
 'nn.functional.sigmoid': [('x', 'pos', '<required>'), ('name', 'pos', None), ('out', 'kw', None)],
 'nn.functional.silu': [('x', 'pos', '<required>'), ('inplace', 'pos', False),
                        ('name', 'pos', None)],
 'nn.functional.softmax': [('x', 'pos', '<required>'), ('axis', 'pos', -1), ('dtype', 'pos', None),
                           ('name', 'pos', None), ('out', 'kw', None)],
 'nn.functional.softplus': [('x', 'pos', '<required>'), ('beta', 'pos', 1),
                            ('threshold', 'pos', 20), ('name', 'pos', None)],
 'normal': [('mean', 'pos', 0.0), ('std', 'pos', 1.0), ('shape', 'pos', None),
            ('name', 'pos', None), ('out', 'kw', None)],
 'not_equal': [('x', 'pos', '<required>'), ('y', 'pos', '<required>'), ('name', 'pos', None),
               ('out', 'kw', None)],
 'numel': [('x', 'pos', '<required>'), ('name', 'pos', None)],
 'ones': [('shape', 'pos', '<required>'), ('dtype', 'pos', None), ('name', 'pos', None),
          ('out', 'kw', None), ('device', 'kw', None), ('requires_grad', 'kw', False),
          ('pin_memory', 'kw', False)],
 'ones_like': [('x', 'pos', '<required>'), ('dtype', 'pos', None), ('name', 'pos', None),
               ('device', 'kw', None), ('requires_grad', 'kw', False),
               ('pin_memory', 'kw', False)],
 'pow': [('x', 'pos', '<required>'), ('y', 'pos', '<required>'), ('name', 'pos', None),
         ('out', 'kw', None)],
 'prod': [('x', 'pos', '<required>'), ('axis', 'pos', None), ('keepdim', 'pos', False),
          ('dtype', 'pos', None), ('out', 'pos', None), ('name', 'pos', None)],
 'reciprocal': [('x', 'pos', '<required>'), ('name', 'pos', None)],
 'remainder': [('x', 'pos', '<required>'), ('y', 'pos', '<required>'), ('name', 'pos', None),
               ('out', 'kw', None)],
 'reshape': [('x', 'pos', '<required>'), ('shape', 'pos', '<required>'), ('name', 'pos', None)],
 'roll': [('x', 'pos', '<required>'), ('shifts', 'pos', '<required>'), ('axis', 'pos', None),
          ('name', 'pos', None)],
 'round': [('x', 'pos', '<required>'), ('decimals', 'pos', 0), ('name', 'pos', None),
           ('out', 'kw', None)],
 'rsqrt': [('x', 'pos', '<required>'), ('name', 'pos', None), ('out', 'kw', None)],
 'scatter': [('x', 'pos', '<required>'), ('index', 'pos', '<required>'),
             ('updates', 'pos', '<required>'), ('overwrite', 'pos', True), ('name', 'pos', None),
             ('out', 'pos', None)],
 'set_default_dtype': [('d', 'pos', '<required>')],
 'set_device': [('device', 'pos', '<required>')],
 'sigmoid': [('x', 'pos', '<required>'), ('name', 'pos', None), ('out', 'kw', None)],
 'sign': [('x', 'pos', '<required>'), ('name', 'pos', None), ('out', 'kw', None)],
 'sin': [('x', 'pos', '<required>'), ('name', 'pos', None), ('out', 'kw', None)],
 'slice': [('input', 'pos', '<required>'), ('axes', 'pos', '<required>'),
           ('starts', 'pos', '<required>'), ('ends', 'pos', '<required>')],
 'sort': [('x', 'pos', '<required>'), ('axis', 'pos', -1), ('descending', 'pos', False),
          ('stable', 'pos', False), ('name', 'pos', None)],
 'split': [('x', 'pos', '<required>'), ('num_or_sections', 'pos', '<required>'), ('axis', 'pos', 0),
           ('name', 'pos', None)],
 'sqrt': [('x', 'pos', '<required>'), ('name', 'pos', None), ('out', 'kw', None)],
 'square': [('x', 'pos', '<required>'), ('name', 'pos', None)],
 'squeeze': [('x', 'pos', '<required>'), ('axis', 'pos', None), ('name', 'pos', None)],
 'stack': [('x', 'pos', '<required>'), ('axis', 'pos', 0), ('name', 'pos', None),
           ('out', 'kw', None)],
 'std': [('x', 'pos', '<required>'), ('axis', 'pos', None), ('unbiased', 'pos', True),
         ('keepdim', 'pos', False), ('name', 'pos', None)],
 'subtract': [('x', 'pos', '<required>'), ('y', 'pos', '<required>'), ('name', 'pos', None),
              ('alpha', 'kw', 1), ('out', 'kw', None)],
 'sum': [('x', 'pos', '<required>'), ('axis', 'pos', None), ('dtype', 'pos', None),
         ('keepdim', 'pos', False), ('name', 'pos', None), ('out', 'kw', None)],
 't': [('input', 'pos', '<required>'), ('name', 'pos', None)],
 'take_along_axis': [('arr', 'pos', '<required>'), ('indices', 'pos', '<required>'),
                     ('axis', 'pos', '<required>'), ('broadcast', 'pos', True),
                     ('out', 'kw', None)],
 'tan': [('x', 'pos', '<required>'), ('name', 'pos', None)],
 'tanh': [('x', 'pos', '<required>'), ('name', 'pos', None), ('out', 'kw', None)],
 'tile': [('x', 'pos', '<required>'), ('repeat_times', 'pos', '<required>'), ('name', 'pos', None)],
 'to_tensor': [('data', 'pos', '<required>'), ('dtype', 'pos', None), ('place', 'pos', None),
               ('stop_gradient', 'pos', True)],
 'topk': [('x', 'pos', '<required>'), ('k', 'pos', '<required>'), ('axis', 'pos', None),
          ('largest', 'pos', True), ('sorted', 'pos', True), ('name', 'pos', None),
          ('out', 'kw', None)],
 'transpose': [('x', 'pos', '<required>'), ('perm', 'pos', '<required>'), ('name', 'pos', None)],
 'tril': [('x', 'pos', '<required>'), ('diagonal', 'pos', 0), ('name', 'pos', None),
          ('out', 'kw', None)],
 'triu': [('x', 'pos', '<required>'), ('diagonal', 'pos', 0), ('name', 'pos', None),
          ('out', 'kw', None)],
 'uniform': [('shape', 'pos', '<required>'), ('dtype', 'pos', None), ('min', 'pos', 0),
             ('max', 'pos', 1.0), ('seed', 'pos', 0), ('name', 'pos', None), ('out', 'kw', None),
             ('device', 'kw', None), ('requires_grad', 'kw', False)],
 'unsqueeze': [('x', 'pos', '<required>'), ('axis', 'pos', '<required>'), ('name', 'pos', None)],
 'var': [('x', 'pos', '<required>'), ('axis', 'pos', None), ('unbiased', 'pos', None),
         ('keepdim', 'pos', False), ('name', 'pos', None), ('correction', 'kw', 1),
         ('out', 'kw', None)],
 'where': [('condition', 'pos', '<required>'), ('x', 'pos', None), ('y', 'pos', None),
           ('name', 'pos', None), ('out', 'kw', None)],
 'zeros': [('shape', 'pos', '<required>'), ('dtype', 'pos', None), ('name', 'pos', None),
           ('out', 'kw', None), ('device', 'kw', None), ('requires_grad', 'kw', False),
           ('pin_memory', 'kw', False)],
 'zeros_like': [('x', 'pos', '<required>'), ('dtype', 'pos', None), ('name', 'pos', None),
                ('device', 'kw', None), ('requires_grad', 'kw', False),
                ('pin_memory', 'kw', False)]}


# Paddle parameters hwport does not take (keyword-only in Paddle unless said): out= (results
# are always new tensors), device/requires_grad/pin_memory (creation ops take place=; autograd
# flags belong to the autograd layer), mean's dtype=, add/subtract's alpha=, divide's
# rounding_mode=, var's correction=, cumprod's dtype=.
NOT_TAKEN = {"out", "device", "requires_grad", "pin_memory", "alpha", "rounding_mode",
             "correction", "dtype"}

# key -> {param: why hwport's differs}; every entry is in docs/paddle-compat.md too.
DIFFERENCES = {
    "transpose": {"perm": "default None (reverse the dims) where Paddle requires it"},
    "Tensor.transpose": {"perm": "default None (reverse the dims) where Paddle requires it"},
    "where": {"x": "required: the one-argument where(condition) (nonzero) is not supported",
              "y": "required: the one-argument where(condition) (nonzero) is not supported"},
    "gather": {"axis": "default 0, Paddle's None means 0; None itself is refused"},
    "topk": {"axis": "default -1, Paddle's None means -1; None itself is refused"},
    "var": {"unbiased": "default True; Paddle 3.3's None also means unbiased (correction=1)"},
    "softmax": {"input": "x, as nn.functional.softmax", "dim": "axis=-1, as nn.functional.softmax"},
    "Tensor.softmax": {"dim": "axis=-1, as nn.functional.softmax"},
}


# Paddle functions whose name hwport uses for another of Paddle's layouts: hwport's
# nn.functional.scaled_dot_product_attention is paddle.compat.nn.functional's ([..., heads, L,
# D], as PyTorch), not paddle.nn.functional's ([B, L, heads, D]); docs/paddle-compat.md says so.
OTHER_LAYOUT = {"nn.functional.scaled_dot_product_attention"}


def _ours(key: str):
    if key.startswith("compat.nn.functional."):
        return getattr(F, key.removeprefix("compat.nn.functional."))
    if key.startswith("nn.functional."):
        return getattr(F, key.removeprefix("nn.functional."))
    if key.startswith("Tensor."):
        return getattr(hwport.Tensor, key.removeprefix("Tensor."))
    return getattr(hwport, key)


def _leading(params, method: bool):
    """Paddle's positional parameters before `name` (out= dropped: not taken)."""
    out = []
    for name, kind, default in params[1 if method else 0:]:
        if name == "name":
            break
        if kind == "pos" and name != "out":
            out.append((name, default))
    return out


@pytest.mark.parametrize("key", sorted(PADDLE_3_3_1))
def test_signature_matches_paddles(key):
    if key in OTHER_LAYOUT:
        pytest.skip(f"{key}: hwport has paddle.compat's form (docs/paddle-compat.md)")
    method = key.startswith("Tensor.")
    sig = inspect.signature(_ours(key))
    ours = list(sig.parameters.values())[1 if method else 0:]
    positional = [p for p in ours if p.kind is p.POSITIONAL_OR_KEYWORD]
    allowed = DIFFERENCES.get(key, {})
    want = _leading(PADDLE_3_3_1[key], method)
    assert len(positional) >= len(want), (key, [p.name for p in positional], want)
    for got, (name, default) in zip(positional, want, strict=False):
        if name in allowed:
            continue
        assert got.name == name, f"{key}: parameter {got.name!r} where Paddle has {name!r}"
        if default == "<required>":
            assert got.default is got.empty, f"{key}: {name} must be required, as in Paddle"
        else:
            same = got.default is not got.empty and got.default == default and \
                isinstance(got.default, bool) == isinstance(default, bool)
            assert same, f"{key}: {name} defaults to {got.default!r}, Paddle's is {default!r}"
    names = {p.name for p in sig.parameters.values()}
    if any(n == "name" for n, _, _ in PADDLE_3_3_1[key]):
        assert "name" in names, f"{key} must take Paddle's name=None"
    if any(kind == "var" for _, kind, _ in PADDLE_3_3_1[key]):
        assert any(p.kind is p.VAR_POSITIONAL for p in sig.parameters.values()), key
    for n, _kind, _ in PADDLE_3_3_1[key]:  # everything else Paddle takes is documented as not
        assert n in names or n in NOT_TAKEN or n in ("self", "x", "var", "input") or \
            n in allowed, (key, n)


@pytest.mark.parametrize("key", ["reshape", "transpose", "expand", "tile"])
def test_varargs_forms_take_separate_ints(key):
    sig = inspect.signature(_ours(key))
    assert any(p.kind is p.VAR_POSITIONAL for p in sig.parameters.values())


def test_docs_list_every_audited_function_and_difference():
    doc = (Path(__file__).resolve().parents[2] / "docs" / "paddle-compat.md").read_text()
    for key in PADDLE_3_3_1:
        assert f"`{key}`" in doc or f"`{key}(" in doc, f"docs/paddle-compat.md lacks {key}"
    for key, params in DIFFERENCES.items():
        for p in params:
            assert p in doc, (key, p)


def _t(a, dtype=None):
    return paddle.to_tensor(a, dtype=dtype, place="custom:cpu")


# ---- Tensor.shape and the other Tensor conveniences -----------------------------------------

def test_shape_is_a_list_that_equals_tuples():
    x = paddle.ones([2, 3, 4])
    s = x.shape
    assert isinstance(s, list) and isinstance(s, paddle.Size) and s == [2, 3, 4]
    assert s == (2, 3, 4) and not (s != (2, 3, 4)) and s != (2, 3) and s != [2, 3]
    assert paddle.ones([]).shape == () and paddle.ones([]).shape == []
    assert s < (3,) and s <= (2, 3, 4) and s > (2, 3) and s >= [2, 3, 4] and s != 5
    assert (s == np.array([2, 3, 4])).all()
    assert s[1:] == [3, 4] and isinstance(s[1:], paddle.Size) and s[-1] == 4
    assert s + (5,) == [2, 3, 4, 5] and (1,) + s == [1, 2, 3, 4] and s + [5] == (2, 3, 4, 5)
    assert s.numel() == 24 and list(s) == [2, 3, 4] and tuple(s) == (2, 3, 4)
    assert repr(s) == "[2, 3, 4]"
    with pytest.raises(TypeError):
        hash(s)  # a list, as paddle.Size is
    s.append(9)  # a fresh list each time: the tensor is not changed
    assert x.shape == [2, 3, 4]
    assert np.zeros(x.shape).shape == (2, 3, 4)


def test_numel_dim_size_item():
    x = _t(np.arange(6, dtype=np.float32).reshape(2, 3))
    n = x.numel()
    assert isinstance(n, paddle.Tensor) and n.dtype == paddle.int64 and n.shape == []
    assert int(n) == 6 and paddle.numel(x).item() == 6 and x.size == 6
    assert isinstance(x.size, int) and x.size + 1 == 7 and x.size * 2 == 12
    assert x.size() == [2, 3] and isinstance(x.size(), paddle.Size) and x.size(1) == 3
    assert x.size(-2) == 2 and paddle.ones([]).size == 1 and paddle.ones([]).size() == []
    with pytest.raises(IndexError, match=r"size\(\): dim 2 is out of range"):
        x.size(2)
    assert x.dim() == 2 == x.ndimension() == x.ndim and len(x) == 2
    assert x.item(4) == 4.0 and x.item(1, 2) == 5.0 and _t(7.5).item() == 7.5
    assert isinstance(_t([3], "int64").item(), int)
    with pytest.raises(ValueError, match=r"item\(\): tensor of shape \[2, 3\] has 6"):
        x.item()
    with pytest.raises(IndexError, match=r"item\(\): index 6 is out of range"):
        x.item(6)
    with pytest.raises(TypeError, match=r"item\(\): indices must be ints"):
        x.item(1.0)
    with pytest.raises(TypeError, match="numel: x expected a Tensor"):
        paddle.numel(np.ones(3))


def test_index_of_0d_integer_tensors():
    assert list(range(_t(3, "int64"))) == [0, 1, 2]
    assert [10, 20, 30][_t(2, "int32")] == 30 and operator.index(_t(True)) == 1
    with pytest.raises(TypeError, match="only 0-d integer tensors"):
        operator.index(_t(2.0))
    with pytest.raises(TypeError, match="only 0-d integer tensors"):
        operator.index(_t([2], "int64"))
    x = _t(np.arange(12, dtype=np.float32).reshape(3, 4))
    np.testing.assert_array_equal(x[_t(1, "int64")].numpy(), np.arange(4, 8))


def test_t_clone_cast_astype():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    x = _t(a)
    np.testing.assert_array_equal(x.t().numpy(), a.T)
    np.testing.assert_array_equal(paddle.t(x).numpy(), a.T)
    np.testing.assert_array_equal(x.T.numpy(), a.T)
    v = _t(a[0])
    assert v.t() is v and paddle.t(_t(1.0)).shape == []
    with pytest.raises(ValueError, match="t: input expected at most 2 dims, got 3"):
        paddle.ones([1, 2, 3]).t()
    c = x.clone()
    assert not c._shares_storage(x) and c.dtype == x.dtype and c.shape == x.shape
    np.testing.assert_array_equal(paddle.clone(x[:, 1:]).numpy(), a[:, 1:])
    assert x.cast("float64").dtype == paddle.float64 == x.astype(paddle.float64).dtype
    assert x.astype("int32").numpy().tolist() == a.astype(np.int32).tolist()
    assert x.element_size() == 4 and x.cast("float16").element_size() == 2
    assert paddle.is_tensor(x) and not paddle.is_tensor(a) and not paddle.is_tensor(1.0)


def test_tensor_methods_paddle_code_uses():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((2, 3, 4)).astype(np.float32)
    x = _t(a)
    close = np.testing.assert_allclose
    close(x.pow(2).numpy(), a ** 2, rtol=1e-6)
    close(x.mean(-1, keepdim=True).numpy(), a.mean(-1, keepdims=True), rtol=1e-5, atol=1e-6)
    close(x.mean(-1, True).numpy(), a.mean(-1, keepdims=True), rtol=1e-5, atol=1e-6)
    close(x.sum(axis=1).numpy(), a.sum(1), rtol=1e-5, atol=1e-6)
    close(x.sum(-1, True).numpy(), a.sum(-1, keepdims=True), rtol=1e-5, atol=1e-6)
    close(paddle.sum(x, 0, False).numpy(), a.sum(0), rtol=1e-5, atol=1e-6)
    assert paddle.sum(_t([[1, 2]], "int32"), 1, "float64", True).dtype == paddle.float64
    close(x.max(-1, True).numpy(), a.max(-1, keepdims=True))
    assert x.reshape([4, 6]).shape == [4, 6] and x.reshape(4, 6).shape == [4, 6]
    assert x.reshape((-1,)).shape == [24] and x.reshape(shape=[6, 4]).shape == [6, 4]
    np.testing.assert_array_equal(x.transpose([2, 0, 1]).numpy(), a.transpose(2, 0, 1))
    np.testing.assert_array_equal(x.transpose(2, 0, 1).numpy(), a.transpose(2, 0, 1))
    assert x.unsqueeze(0).shape == [1, 2, 3, 4] and x.unsqueeze([0, 1]).shape == [1, 1, 2, 3, 4]
    assert x.flatten().shape == [24] and x.flatten(1).shape == [2, 12]
    assert x[:, :1].squeeze(1).shape == [2, 4]
    assert x.expand(5, 2, 3, 4).shape == [5, 2, 3, 4]
    np.testing.assert_array_equal(x.tile(1, 2, 1).numpy(), np.tile(a, (1, 2, 1)))
    assert x.numpy().dtype == np.float32 and x.tolist() == a.tolist()
    assert [p.shape for p in x.split(2, axis=2)] == [[2, 3, 2], [2, 3, 2]]
    _, k = x.chunk(2, axis=-1)
    np.testing.assert_array_equal(k.numpy(), a[..., 2:])
    assert [p.shape for p in paddle.chunk(x, 3, 1)] == [[2, 1, 4]] * 3
    with pytest.raises(TypeError, match="chunk: chunks expected an int"):
        x.chunk([1, 2])
    close(x.matmul(x, transpose_y=True).numpy(), a @ a.transpose(0, 2, 1), rtol=1e-5,
          atol=1e-5)


def test_varargs_functions_and_their_errors():
    a = np.arange(6, dtype=np.float32)
    x = _t(a)
    np.testing.assert_array_equal(paddle.reshape(x, 2, 3).numpy(), a.reshape(2, 3))
    np.testing.assert_array_equal(paddle.transpose(paddle.reshape(x, 3, 2), 1, 0).numpy(),
                                  a.reshape(3, 2).T)
    np.testing.assert_array_equal(paddle.tile(x, 2).numpy(), np.tile(a, 2))
    assert paddle.expand(paddle.reshape(x, 1, 6), 3, 6).shape == [3, 6]
    with pytest.raises(TypeError, match=r"reshape: shape given as separate arguments must be ints"):
        paddle.reshape(x, 2, 3.0)
    with pytest.raises(TypeError, match=r"transpose: perm given as separate arguments"):
        paddle.transpose(x, [0], 1)


# ---- default dtype and creation ---------------------------------------------------------------

@pytest.fixture
def default_float64():
    paddle.set_default_dtype("float64")
    try:
        yield
    finally:
        paddle.set_default_dtype("float32")


def test_default_dtype_is_float32_and_creation_follows_paddle():
    assert paddle.get_default_dtype() == "float32"
    assert _t(1.5).dtype == paddle.float32 and _t([1, 2]).dtype == paddle.int64
    assert paddle.zeros([2]).dtype == paddle.float32 == paddle.ones([2]).dtype
    assert paddle.full([2], 1).dtype == paddle.float32  # Paddle: not int64
    assert paddle.full([2], True).dtype == paddle.bool_
    assert paddle.full([2], 1, dtype="int64").dtype == paddle.int64
    assert paddle.arange(3).dtype == paddle.int64 and paddle.arange(3.0).dtype == paddle.float32
    assert paddle.linspace(0, 1, 3).dtype == paddle.float32 == paddle.eye(2).dtype
    np.testing.assert_array_equal(paddle.full([2, 2], 7).numpy(), np.full((2, 2), 7.0))


def test_set_default_dtype_float64(default_float64):
    assert paddle.get_default_dtype() == "float64"
    assert _t(1.5).dtype == paddle.float64 and _t([[1.0, 2]]).dtype == paddle.float64
    assert _t(np.float32(1)).dtype == paddle.float32  # numpy data keeps its dtype
    assert _t([1, 2]).dtype == paddle.int64
    for made in (paddle.zeros([2]), paddle.ones([2]), paddle.full([2], 1), paddle.eye(2),
                 paddle.linspace(0, 1, 3), paddle.arange(0, 1, 0.25),
                 paddle.uniform([3], seed=1), paddle.normal(shape=[3], seed=1)):
        assert made.dtype == paddle.float64, made
    assert paddle.arange(4).dtype == paddle.int64
    assert paddle.zeros_like(_t([1, 2])).dtype == paddle.int64  # like x, as in Paddle
    np.testing.assert_array_equal(paddle.arange(0, 1, 0.25).numpy(), np.arange(0, 1, 0.25))
    x32 = paddle.ones([2], "float32")
    assert (x32 * 2.5).dtype == paddle.float32  # a Python scalar does not promote


def test_set_default_dtype_takes_names_dtypes_numpy_and_refuses_others():
    try:
        paddle.set_default_dtype(paddle.float16)
        assert paddle.get_default_dtype() == "float16" and _t(0.5).dtype == paddle.float16
        paddle.set_default_dtype(np.float64)
        assert paddle.get_default_dtype() == "float64"
        paddle.set_default_dtype("bfloat16")
        assert paddle.get_default_dtype() == "bfloat16"
        for bad in ("int32", paddle.int64, "complex64", 3):
            with pytest.raises(TypeError, match="set_default_dtype: d expected one of"):
                paddle.set_default_dtype(bad)
        assert paddle.get_default_dtype() == "bfloat16"
    finally:
        paddle.set_default_dtype("float32")


def test_to_tensor_stop_gradient():
    assert paddle.to_tensor([1.0], stop_gradient=True).numpy().tolist() == [1.0]
    if hasattr(paddle.Tensor, "stop_gradient"):  # once the autograd layer has landed
        assert paddle.to_tensor([1.0], stop_gradient=False).stop_gradient is False
    else:
        with pytest.raises(NotImplementedError, match="to_tensor: stop_gradient=False"):
            paddle.to_tensor([1.0], stop_gradient=False)


def test_uniform_and_normal_in_paddles_order():
    u = paddle.uniform([2000], "float64", -2.0, 3.0, 7)
    assert u.dtype == paddle.float64 and u.shape == [2000]
    v = u.numpy()
    assert v.min() >= -2.0 and v.max() < 3.0 and abs(v.mean() - 0.5) < 0.15
    np.testing.assert_array_equal(paddle.uniform([2000], "float64", min=-2.0, max=3.0,
                                                 seed=7).numpy(), v)
    n = paddle.normal(1.0, 2.0, [4000], seed=3).numpy()
    assert n.dtype == np.float32 and abs(n.mean() - 1.0) < 0.15 and abs(n.std() - 2.0) < 0.15
    with pytest.raises(TypeError, match="uniform: min"):
        paddle.uniform([2], min="a", seed=1)


# ---- functions with Paddle's extra parameters ---------------------------------------------------

def test_gelu_approximate_takes_paddles_strings():
    a = np.linspace(-4, 4, 41).astype(np.float64)
    x = _t(a)
    exact = F.gelu(x).numpy()
    from math import erf
    np.testing.assert_allclose(exact, [v * 0.5 * (1 + erf(v / np.sqrt(2))) for v in a],
                               rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(F.gelu(x, approximate="none").numpy(), exact)
    tanh = 0.5 * a * (1 + np.tanh(np.sqrt(2 / np.pi) * (a + 0.044715 * a ** 3)))
    np.testing.assert_allclose(F.gelu(x, "tanh").numpy(), tanh, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(F.gelu(x, True).numpy(), F.gelu(x, "tanh").numpy())
    with pytest.raises(ValueError, match=r"gelu: approximate expected True, False, 'tanh'"):
        F.gelu(x, approximate="fast")


def test_extra_parameters_accepted_or_refused_clearly():
    a = np.array([[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]], np.float32)
    x = _t(a)
    np.testing.assert_array_equal(paddle.sort(x, stable=True).numpy(), np.sort(a, -1))
    np.testing.assert_array_equal(paddle.argsort(x, -1, True, False).numpy(),
                                  np.argsort(-a, -1, kind="stable"))
    assert paddle.argmax(x, 1, dtype="int64").numpy().tolist() == [0, 1]
    assert paddle.argmax(x, dtype=paddle.int64).item() == 4
    with pytest.raises(NotImplementedError, match=r"argmax: dtype='int32' is not supported"):
        paddle.argmax(x, dtype="int32")
    np.testing.assert_array_equal(paddle.round(x, 0).numpy(), np.round(a))
    with pytest.raises(NotImplementedError, match=r"round: decimals=2"):
        paddle.round(x, decimals=2)
    with pytest.raises(NotImplementedError, match=r"dropout: inplace=True"):
        F.dropout(x, 0.5, inplace=True)
    with pytest.raises(NotImplementedError, match=r"silu: inplace=True"):
        F.silu(x, inplace=True)
    with pytest.raises(NotImplementedError, match=r"prod: dtype=str"):
        paddle.prod(x, dtype="float64")
    with pytest.raises(NotImplementedError, match=r"cumsum: dtype=str"):
        paddle.cumsum(x, dtype="float64")
    with pytest.raises(NotImplementedError, match=r"scatter: overwrite=False"):
        paddle.scatter(x, _t([0], "int64"), x[:1], overwrite=False)
    with pytest.raises(NotImplementedError, match=r"pad: data_format=str"):
        F.pad(x, [1, 1, 1, 1], data_format="NCHW")
    with pytest.raises(TypeError):
        paddle.where(x > 1)  # the nonzero form: a documented difference


def test_sdpa_is_paddle_compats_and_matches_torch():
    """paddle.compat.nn.functional.scaled_dot_product_attention's signature and layout
    ([B, heads, L, D], PyTorch's)."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    q, k, v = (rng.standard_normal((2, 3, 5, 8)).astype(np.float32) for _ in range(3))
    got = F.scaled_dot_product_attention(_t(q), _t(k), _t(v), None, 0.0, True).numpy()
    tq, tk, tv = (torch.from_numpy(a) for a in (q, k, v))
    want = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, is_causal=True)
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-5, atol=1e-5)
    with pytest.raises(NotImplementedError, match=r"scaled_dot_product_attention: dropout_p"):
        F.scaled_dot_product_attention(_t(q), _t(k), _t(v), dropout_p=0.1)
    with pytest.raises(NotImplementedError, match=r"scaled_dot_product_attention: enable_gqa"):
        F.scaled_dot_product_attention(_t(q), _t(k), _t(v), enable_gqa=True)


def test_set_device_and_get_device():
    before = paddle.get_device()
    try:
        assert str(paddle.set_device("cpu")) == "custom:cpu:0"
        assert str(paddle.set_device(device="custom:cpu")) == "custom:cpu:0"
        assert paddle.get_device() == "custom:cpu:0"
        assert paddle.get_device(paddle.ones([1])) == "custom:cpu:0"
    finally:
        paddle.set_device(before)


def test_the_issues_rms_norm_snippet_runs_as_paddle_code():
    """The forward of a Paddle RMSNorm layer, written against `import hwport as paddle`."""
    rng = np.random.default_rng(2)
    a = rng.standard_normal((2, 5, 16)).astype(np.float32)
    w = rng.standard_normal(16).astype(np.float32)
    x, weight = paddle.to_tensor(a), paddle.to_tensor(w, dtype=paddle.get_default_dtype())
    variance = x.pow(2).mean(-1, keepdim=True)
    out = x * paddle.rsqrt(variance + 1e-6) * weight
    want = a / np.sqrt((a.astype(np.float64) ** 2).mean(-1, keepdims=True) + 1e-6) * w
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(F.rms_norm(x, [16], weight, 1e-6).numpy(), want, rtol=1e-5,
                               atol=1e-5)
    assert out.shape == [2, 5, 16] and out.shape == x.shape
    logits = paddle.matmul(x, paddle.transpose(x, [0, 2, 1]))
    probs = F.softmax(logits, axis=-1)
    np.testing.assert_allclose(probs.sum(-1).numpy(), np.ones((2, 5)), rtol=1e-5)
    m = paddle.maximum(x, paddle.zeros_like(x))
    np.testing.assert_array_equal(m.numpy(), np.maximum(a, 0))


def _places_with_devices() -> list[str]:
    return [f"custom:{p['device_type']}" for p in hwport.runtime.plugins()
            if p["device_type"] in ("cpu", "opencl") and p["device_count"] > 0]


def test_the_issues_rms_norm_layer_trains_on_every_place():
    """The issue's proof, as a Paddle user writes it: an RMSNorm Layer whose weight comes from
    the module-level paddle.create_parameter (shape [768], the default dtype, Constant(1.0)),
    forward x.pow(2).mean(-1, keepdim=True) / paddle.rsqrt / broadcasting multiplies; forward
    and backward on custom:cpu and custom:opencl (the device chosen by set_device only),
    against the closed-form float64 gradients in numpy."""
    import hwport.nn as nn

    class RMSNorm(nn.Layer):
        def __init__(self, hidden_size=768, eps=1e-6):
            super().__init__()
            self.weight = paddle.create_parameter(
                shape=[hidden_size], dtype=paddle.get_default_dtype(),
                default_initializer=nn.initializer.Constant(1.0))
            self.variance_epsilon = eps

        def forward(self, hidden_states):
            variance = hidden_states.pow(2).mean(-1, keepdim=True)
            hidden_states = paddle.rsqrt(variance + self.variance_epsilon) * hidden_states
            return hidden_states * self.weight

    rng = np.random.default_rng(4)
    a = rng.standard_normal((2, 3, 768)).astype(np.float32)
    g = rng.standard_normal((2, 3, 768)).astype(np.float32)
    w = 1.0 + 0.1 * rng.standard_normal(768)
    x64, g64 = a.astype(np.float64), g.astype(np.float64)
    r = 1.0 / np.sqrt((x64 ** 2).mean(-1, keepdims=True) + 1e-6)
    want_out = x64 * r * w
    want_dw = (g64 * x64 * r).sum((0, 1))
    gw = g64 * w
    want_dx = r * gw - x64 * r ** 3 * (gw * x64).mean(-1, keepdims=True)
    places = _places_with_devices()
    assert "custom:cpu" in places
    before = paddle.get_device()
    try:
        for place in places:
            paddle.set_device(place)
            layer = RMSNorm()
            assert [k for k, _ in layer.named_parameters()] == ["weight"]
            assert layer.weight.dtype == paddle.float32 and not layer.weight.stop_gradient
            assert str(layer.weight.place).startswith(place)
            np.testing.assert_array_equal(layer.weight.numpy(), np.ones(768, np.float32))
            layer.weight.set_value(w.astype(np.float32))
            x = paddle.to_tensor(a, stop_gradient=False)
            out = layer(x)
            assert str(out.place).startswith(place) and out.shape == [2, 3, 768]
            out.backward(paddle.to_tensor(g))
            np.testing.assert_allclose(out.numpy(), want_out, rtol=1e-5, atol=1e-5,
                                       err_msg=place)
            np.testing.assert_allclose(x.grad.numpy(), want_dx, rtol=1e-4, atol=1e-5,
                                       err_msg=place)
            np.testing.assert_allclose(layer.weight.grad.numpy(), want_dw, rtol=1e-4,
                                       atol=1e-4, err_msg=place)
    finally:
        paddle.set_device(before)


# ---- the ops.yaml `api` keys this surface needs (phi_ops/schema.py checks them) -------------

@pytest.mark.parametrize(("op", "api", "says"), [
    ("reshape", {"params": ["x", "shape"], "varargs": "dims"}, "varargs 'dims' is not in params"),
    ("sort", {"params": ["x", "axis"], "ignored": {"stable": False}}, "'stable' is not in params"),
    ("zeros", {"params": ["shape", "dtype"], "defaults": {"size": None}},
     "'size' is neither in params nor an input or attr"),
    ("uniform", {"params": ["shape"]}, "required attr 'seed' is not in params"),
    ("gelu", {"params": ["x"], "typo": 1}, "unknown fields ['typo']"),
    ("sum", {"params": ["x", "axis", "dtype"], "bool_as": {"dtype": "keepdim"}},
     "bool_as 'dtype' -> 'keepdim': both must be in params"),
])
def test_schema_refuses_bad_api_fields(tmp_path, op, api, says):
    import yaml

    from phi_ops.schema import OPS_YAML, OpsYamlError, load_ops
    raw = yaml.safe_load(Path(OPS_YAML).read_text())
    entry = next(e for e in raw["ops"] if e["name"] == op)
    entry["api"] = api
    path = tmp_path / "ops.yaml"
    path.write_text(yaml.safe_dump(raw))
    with pytest.raises(OpsYamlError, match=re.escape(says)):
        load_ops(str(path))
