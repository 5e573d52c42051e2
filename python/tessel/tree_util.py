"""Pytrees (jax.tree_util): nested tuples, lists, dicts, namedtuples and None, plus classes
registered with `register_pytree_node` or `register_pytree_node_class`. Leaves are
everything else. Dicts flatten in sorted key order, None is a node without children."""

__all__ = ["PyTreeDef", "tree_flatten", "tree_unflatten", "tree_leaves", "tree_structure", "tree_map",
           "register_pytree_node", "register_pytree_node_class", "treedef_children", "broadcast_prefix"]

_registry = {}


class PyTreeDef:
    """The structure of a pytree without its leaves; hashable and comparable (it keys jit's cache)."""

    __slots__ = ("node_type", "node_data", "children", "num_leaves", "_hash")

    def __init__(self, node_type, node_data, children):
        self.node_type = node_type  # None marks a leaf
        self.node_data = node_data
        self.children = children
        self.num_leaves = 1 if node_type is None else sum(c.num_leaves for c in children)
        self._hash = hash((node_type, node_data, children))

    def __eq__(self, other):
        return (isinstance(other, PyTreeDef) and self._hash == other._hash and self.node_type is other.node_type
                and self.node_data == other.node_data and self.children == other.children)

    def __hash__(self):
        return self._hash

    def __repr__(self):
        return f"PyTreeDef({self._text()})"

    def _text(self):
        if self.node_type is None:
            return "*"
        inner = ", ".join(c._text() for c in self.children)
        if self.node_type is type(None):
            return "None"
        if self.node_type is tuple:
            return f"({inner}{',' if len(self.children) == 1 else ''})"
        if self.node_type is list:
            return f"[{inner}]"
        if self.node_type is dict:
            return "{" + ", ".join(f"{k!r}: {c._text()}" for k, c in zip(self.node_data, self.children)) + "}"
        return f"{self.node_type.__name__}({inner})"


_LEAF = PyTreeDef(None, None, ())
_NONE = PyTreeDef(type(None), None, ())


def register_pytree_node(nodetype, flatten_func, unflatten_func):
    """Makes instances of `nodetype` pytree nodes: flatten_func(x) -> (children, aux_data),
    unflatten_func(aux_data, children) -> x. aux_data must be hashable."""
    _registry[nodetype] = (flatten_func, unflatten_func)


def register_pytree_node_class(cls):
    """Class decorator: registers a class with `tree_flatten(self)` and `tree_unflatten(cls, aux, children)`."""
    register_pytree_node(cls, lambda x: x.tree_flatten(), cls.tree_unflatten)
    return cls


def _flatten(x, leaves, is_leaf):
    if is_leaf is not None and is_leaf(x):
        leaves.append(x)
        return _LEAF
    if x is None:
        return _NONE
    t = type(x)
    if t is tuple or t is list:
        return PyTreeDef(t, None, tuple(_flatten(c, leaves, is_leaf) for c in x))
    if t is dict:
        keys = tuple(sorted(x))
        return PyTreeDef(dict, keys, tuple(_flatten(x[k], leaves, is_leaf) for k in keys))
    reg = _registry.get(t)
    if reg is not None:
        children, aux = reg[0](x)
        return PyTreeDef(t, aux, tuple(_flatten(c, leaves, is_leaf) for c in children))
    if isinstance(x, tuple) and hasattr(t, "_fields"):  # namedtuple
        return PyTreeDef(t, None, tuple(_flatten(c, leaves, is_leaf) for c in x))
    leaves.append(x)
    return _LEAF


def tree_flatten(tree, is_leaf=None):
    """(leaves, treedef) of a pytree; `is_leaf(x)` may stop the recursion at x."""
    leaves = []
    treedef = _flatten(tree, leaves, is_leaf)
    return leaves, treedef


def _unflatten(treedef, it):
    t = treedef.node_type
    if t is None:
        return next(it)
    if t is type(None):
        return None
    children = [_unflatten(c, it) for c in treedef.children]
    if t is tuple:
        return tuple(children)
    if t is list:
        return children
    if t is dict:
        return dict(zip(treedef.node_data, children))
    reg = _registry.get(t)
    if reg is not None:
        return reg[1](treedef.node_data, children)
    return t(*children)  # namedtuple


def tree_unflatten(treedef, leaves):
    """The pytree of structure `treedef` with `leaves` in order."""
    leaves = list(leaves)
    if len(leaves) != treedef.num_leaves:
        raise ValueError(f"tree_unflatten: the structure {treedef} has {treedef.num_leaves} leaves, "
                         f"but {len(leaves)} were given")
    return _unflatten(treedef, iter(leaves))


def tree_leaves(tree, is_leaf=None):
    """The leaves of a pytree, in flattening order."""
    return tree_flatten(tree, is_leaf)[0]


def tree_structure(tree, is_leaf=None):
    """The PyTreeDef of a pytree."""
    return tree_flatten(tree, is_leaf)[1]


def treedef_children(treedef):
    """The treedefs of the children of the root node."""
    return list(treedef.children)


def tree_map(f, tree, *rest, is_leaf=None):
    """A pytree of `f(leaf, *leaves of rest)`; the other trees must have the same structure."""
    leaves, treedef = tree_flatten(tree, is_leaf)
    others = []
    for r in rest:
        rl, rt = tree_flatten(r, is_leaf)
        if rt != treedef:
            raise ValueError(f"tree_map: the trees have different structures: {treedef} and {rt}")
        others.append(rl)
    return tree_unflatten(treedef, [f(*xs) for xs in zip(leaves, *others)])


def broadcast_prefix(prefix, tree, is_prefix_leaf, mismatch):
    """One entry of `prefix` per leaf of `tree`: `prefix` is a tree prefix of `tree` (tuples,
    lists and dicts matching `tree`'s) whose leaves satisfy `is_prefix_leaf`, each standing
    for every leaf below it. `mismatch(p, t)` makes the exception for a part that does not
    match (`p` of the prefix against `t` of the tree)."""
    out = []

    def rec(p, t):
        if is_prefix_leaf(p):
            out.extend([p] * len(tree_leaves(t)))
        elif isinstance(p, (tuple, list)) and isinstance(t, (tuple, list)) and len(p) == len(t):
            for pi, ti in zip(p, t):
                rec(pi, ti)
        elif isinstance(p, dict) and isinstance(t, dict) and set(p) == set(t):
            for k in sorted(t):
                rec(p[k], t[k])
        else:
            raise mismatch(p, t)

    rec(prefix, tree)
    return out
