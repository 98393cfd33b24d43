"""Every trusted tree is checked before it is walked.

scikit-learn's tree walkers (``Tree``, gradient boosting's ``predict_stages``, histogram
boosting's ``TreePredictor``) and LightGBM's follow the stored child and feature indices
without bounds checks. Each forged file here is a real file (``skops.io.dump``,
``Booster.save_model``) whose tree arrays were edited the way an attacker would: a loop
hangs the plain library past SIGINT and SIGTERM, an index out of range crashes it. The
controls show that (each file walked by the plain library in a forked child that is killed
after a few seconds); faux refuses each file in one line before anything predicts. A forged
file is never walked in the test process: faux's loads of them run in a child under a
timeout too, so a check that let one through fails the test instead of hanging it.
"""

import copy
import json
import subprocess
import sys
import zipfile

import numpy as np
import pytest

from audit_world import proxy_world
from faux.audit.loaders.models import load_model
from faux.audit.loaders.tree_check import TreeError, check_tree, estimator_trees
from test_audit_loaders_security import ENV, _python

# --------------------------------------------------------------------------- forging


def _world(n=400, seed=0):
    """Rows of 4 features (column 2 small integer categories) and a binary label."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    X[:, 2] = rng.integers(0, 8, n)
    y = X[:, 0] + 0.5 * X[:, 1] + 2 * (X[:, 2] % 3 == 0) + 0.3 * rng.normal(size=n) > 1
    return X, y.astype(int)


def _forged_tree(tree, edit):
    """A copy of the scikit-learn ``Tree`` whose state (``Tree.__getstate__``: ``nodes``,
    ``values``, ``node_count``) ``edit`` changed, rebuilt by ``Tree.__setstate__`` as
    unpickling or skops would."""
    from sklearn.tree._tree import Tree

    state = tree.__getstate__()
    state = {**state, "nodes": state["nodes"].copy(), "values": state["values"].copy()}
    edit(state)
    new = Tree(*tree.__reduce__()[1])
    new.__setstate__(state)
    return new


def _splits(nodes):
    """Indices of the split nodes of a Tree's node records."""
    return np.flatnonzero(nodes["left_child"] != -1)


def _loop_to_root(s):  # the last-numbered split's left child is the root again
    s["nodes"]["left_child"][_splits(s["nodes"])[-1]] = 0


def _loop_to_parent(s):  # a split's left child points back at its parent (not the root)
    nodes = s["nodes"]
    parent = next(int(p) for p in _splits(nodes)[1:]
                  if nodes["left_child"][nodes["left_child"][p]] != -1)
    nodes["left_child"][nodes["left_child"][parent]] = parent


def _child_out_of_range(s):
    s["nodes"]["left_child"][_splits(s["nodes"])[-1]] = 10**9


def _feature_out_of_range(s):
    s["nodes"]["feature"][0] = 10**9


SKLEARN_EDITS = {"loop to the root": _loop_to_root, "loop to a parent": _loop_to_parent,
                 "child out of range": _child_out_of_range,
                 "feature out of range": _feature_out_of_range}


def _hist_edit(pred, kind):
    nodes = pred.nodes
    split = np.flatnonzero(nodes["is_leaf"] == 0)
    if kind == "loop to the root":
        nodes["left"][split[-1]] = 0
    elif kind == "child out of range":
        nodes["right"][split[-1]] = 10**9
    elif kind == "feature out of range":
        nodes["feature_idx"][0] = 10**9
    elif kind == "bitset out of range":
        cat = (nodes["is_categorical"] == 1) & (nodes["is_leaf"] == 0)
        nodes["bitset_idx"][np.flatnonzero(cat)[0]] = 10**9
    else:
        raise AssertionError(kind)


def _lgbm_arrays(text: str, tree: int) -> dict[str, list[str]]:
    lines = text.split("\n")
    a = lines.index(f"Tree={tree}")
    out = {}
    for ln in lines[a + 1:]:
        if not ln or ln.startswith("Tree=") or ln == "end of trees":
            break
        k, v = ln.split("=", 1)
        out[k] = v.split()
    return out


def _lgbm_edit(text: str, tree: int, **arrays) -> str:
    """The model text with ``key=values`` lines of ``Tree=<tree>`` replaced and
    ``tree_sizes`` recomputed, so that nothing but the edit is wrong."""
    lines = text.split("\n")
    starts = [k for k, ln in enumerate(lines) if ln.startswith("Tree=")]
    bounds = [*starts, lines.index("end of trees")]
    for k in range(bounds[tree], bounds[tree + 1]):
        key = lines[k].split("=", 1)[0]
        if key in arrays:
            lines[k] = f"{key}=" + " ".join(map(str, arrays[key]))
    sizes = [sum(len(ln.encode()) + 1 for ln in lines[a:b]) for a, b in zip(bounds, bounds[1:])]
    return "\n".join("tree_sizes=" + " ".join(map(str, sizes)) if ln.startswith("tree_sizes=")
                     else ln for ln in lines)


def _lgbm_forged(text: str, kind: str) -> str:
    arr = _lgbm_arrays(text, 0)
    left, right, thr = arr["left_child"], arr["right_child"], arr["threshold"]
    if kind == "loop to the root":
        right[0] = "0"
    elif kind == "loop to a parent":
        p, c = next((p, int(side[p])) for p in range(1, len(left)) for side in (left, right)
                    if int(side[p]) > 0)
        left[c] = str(p)  # the split under p leads back to it
    elif kind == "category set out of range":
        thr[next(i for i, t in enumerate(arr["decision_type"]) if int(t) & 1)] = "1000000000"
    elif kind == "categorical split without categories":
        arr["decision_type"][0] = str(int(arr["decision_type"][0]) | 1)
    else:
        raise AssertionError(kind)
    return _lgbm_edit(text, 0, left_child=left, right_child=right, threshold=thr,
                      decision_type=arr["decision_type"])


def _skops_handle(src, dst, text):
    """A copy of the skops file ``src`` whose LightGBM booster's model text is ``text``."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for info in zin.infolist():
            data = zin.read(info.filename)
            if info.filename == "schema.json":
                schema = json.loads(data)
                state = schema["content"]["content"]["_Booster"]["content"]["content"]
                state["_handle"]["content"] = json.dumps(text)
                data = json.dumps(schema).encode()
            zout.writestr(info, data)
    return dst


def _sklearn_models(X, y):
    """Fitted estimators of each tree kind, small."""
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.ensemble import (
        ExtraTreesClassifier,
        ExtraTreesRegressor,
        GradientBoostingClassifier,
        GradientBoostingRegressor,
        HistGradientBoostingClassifier,
        HistGradientBoostingRegressor,
        RandomForestClassifier,
    )
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.tree import DecisionTreeClassifier, DecisionTreeRegressor

    Xn = X.copy()
    Xn[::7, 1] = np.nan  # missing values: splits that send them one way, thresholds of inf
    return {
        "DecisionTreeClassifier": DecisionTreeClassifier(max_depth=5, random_state=0).fit(X, y),
        "DecisionTreeClassifier pruned": DecisionTreeClassifier(ccp_alpha=0.01,
                                                                random_state=0).fit(X, y),
        "DecisionTreeClassifier NaN": DecisionTreeClassifier(random_state=0).fit(Xn, y),
        "DecisionTreeRegressor": DecisionTreeRegressor(max_depth=4, random_state=0).fit(X, y),
        "RandomForestClassifier": RandomForestClassifier(6, max_depth=5,
                                                         random_state=0).fit(X, y),
        "ExtraTreesClassifier": ExtraTreesClassifier(6, max_depth=5, random_state=0).fit(X, y),
        "ExtraTreesRegressor": ExtraTreesRegressor(4, max_depth=4, random_state=0).fit(X, y),
        "GradientBoostingClassifier": GradientBoostingClassifier(n_estimators=6, max_depth=3,
                                                                 random_state=0).fit(X, y),
        "GradientBoostingRegressor": GradientBoostingRegressor(n_estimators=4,
                                                               random_state=0).fit(X, y),
        "HistGradientBoostingClassifier": HistGradientBoostingClassifier(
            max_iter=6, random_state=0).fit(Xn, y),
        "HistGradientBoostingClassifier categorical": HistGradientBoostingClassifier(
            max_iter=6, categorical_features=[2], random_state=0).fit(X, y),
        "HistGradientBoostingRegressor categorical": HistGradientBoostingRegressor(
            max_iter=4, categorical_features=[2], random_state=0).fit(X, y),
        "Pipeline": make_pipeline(StandardScaler(), RandomForestClassifier(
            4, max_depth=4, random_state=0)).fit(X, y),
        "CalibratedClassifierCV": CalibratedClassifierCV(
            DecisionTreeClassifier(max_depth=4, random_state=0), cv=2).fit(X, y),
    }


def _forge_sklearn(est, kind):
    """A deep copy of ``est`` with one tree forged; the path faux must name."""
    est = copy.deepcopy(est)
    name = type(est).__name__
    if name.startswith("HistGradientBoosting"):
        _hist_edit(est._predictors[1][0], kind)
        return est, f"{name}._predictors[1][0]"
    if name == "Pipeline":
        forest = est.steps[1][1]
        forest.estimators_[2].tree_ = _forged_tree(forest.estimators_[2].tree_,
                                                   SKLEARN_EDITS[kind])
        return est, "Pipeline.steps[1][1].estimators_[2].tree_"
    if name == "CalibratedClassifierCV":
        inner = est.calibrated_classifiers_[1].estimator
        inner.tree_ = _forged_tree(inner.tree_, SKLEARN_EDITS[kind])
        return est, "CalibratedClassifierCV.calibrated_classifiers_[1].estimator.tree_"
    if name.startswith("GradientBoosting"):
        sub = est.estimators_[3, 0]
        sub.tree_ = _forged_tree(sub.tree_, SKLEARN_EDITS[kind])
        return est, f"{name}.estimators_[3, 0].tree_"
    if hasattr(est, "estimators_"):
        sub = est.estimators_[2]
        sub.tree_ = _forged_tree(sub.tree_, SKLEARN_EDITS[kind])
        return est, f"{name}.estimators_[2].tree_"
    est.tree_ = _forged_tree(est.tree_, SKLEARN_EDITS[kind])
    return est, f"{name}.tree_"


#: (model, edit) pairs forged as skops files, and what the refusal must say
SKOPS_FORGED = [
    ("DecisionTreeClassifier", "loop to the root", "leads back to the root"),
    ("DecisionTreeClassifier", "loop to a parent", "is the child of both"),
    ("DecisionTreeClassifier", "child out of range", "outside the"),
    ("DecisionTreeClassifier", "feature out of range", "outside the 4 features"),
    ("RandomForestClassifier", "loop to the root", "leads back to the root"),
    ("ExtraTreesRegressor", "child out of range", "outside the"),
    ("GradientBoostingClassifier", "loop to a parent", "is the child of both"),
    ("GradientBoostingRegressor", "feature out of range", "outside the 4 features"),
    ("HistGradientBoostingClassifier", "loop to the root", "leads back to the root"),
    ("HistGradientBoostingClassifier", "child out of range", "outside the"),
    ("HistGradientBoostingClassifier", "feature out of range", "outside the 4 features"),
    ("HistGradientBoostingClassifier categorical", "bitset out of range", "bitset_idx"),
    ("Pipeline", "loop to the root", "leads back to the root"),
    ("CalibratedClassifierCV", "child out of range", "outside the"),
]
LGBM_FORGED = [
    ("numeric", "loop to the root", "leads back to the root"),
    ("numeric", "loop to a parent", "is the child of both"),
    ("categorical", "category set out of range", "names category set 1e+09"),
    ("numeric", "categorical split without categories", "tree without categories"),
]
#: forged files the plain library is run on (in a forked child): "hang" or "crash"
CONTROLS = {"skops DecisionTreeClassifier loop to the root": "hang",
            "skops DecisionTreeClassifier child out of range": "crash",
            "skops GradientBoostingClassifier loop to a parent": "hang",
            "skops HistGradientBoostingClassifier loop to the root": "hang",
            "skops HistGradientBoostingClassifier feature out of range": "crash",
            "lgbm numeric loop to the root": "hang",
            "lgbm categorical category set out of range": "crash",
            "lgbm in skops loop to the root": "hang"}


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """``files``: ``{name: (path, kind, [what faux's refusal must say])}`` for the clean
    files (nothing to say) and the forged ones; ``X`` and ``rows`` (a .npy of them): the
    rows the models were fitted on; the clean ``models``, LightGBM ``boosters`` and ``clf``
    (an LGBMClassifier, saved with skops)."""
    import lightgbm as lgb
    import skops.io as sio

    folder = tmp_path_factory.mktemp("trees")
    X, y = _world()
    models = _sklearn_models(X, y)
    out = {}
    for name, est in models.items():
        path = folder / f"clean {name}.skops".replace(" ", "_")
        sio.dump(est, path)
        out[f"clean skops {name}"] = (path, "skops", [])
    for model, kind, what in SKOPS_FORGED:
        est, where = _forge_sklearn(models[model], kind)
        path = folder / f"{model} {kind}.skops".replace(" ", "_")
        sio.dump(est, path)
        out[f"skops {model} {kind}"] = (path, "skops", [path.name, where, what])
    params = {"objective": "binary", "verbosity": -1, "num_leaves": 6, "min_data_per_group": 5,
              "cat_smooth": 1, "max_cat_to_onehot": 2}
    boosters = {
        "numeric": lgb.train(params, lgb.Dataset(X, y), 4),
        "categorical": lgb.train(params, lgb.Dataset(X, y, categorical_feature=[2]), 4),
        "linear": lgb.train({**params, "linear_tree": True}, lgb.Dataset(X, y), 4),
    }
    assert "num_cat=1" in boosters["categorical"].model_to_string()
    np.save(folder / "rows.npy", X)
    for name, booster in boosters.items():
        path = folder / f"clean_{name}.txt"
        booster.save_model(path)
        out[f"clean lgbm {name}"] = (path, "lgbm", [])
    for model, kind, what in LGBM_FORGED:
        path = folder / f"{model} {kind}.txt".replace(" ", "_")
        path.write_text(_lgbm_forged(boosters[model].model_to_string(), kind))
        out[f"lgbm {model} {kind}"] = (path, "lgbm", [path.name, "Tree=0", what])
    clf = lgb.LGBMClassifier(n_estimators=4, num_leaves=6, verbose=-1).fit(X, y)
    sio.dump(clf, folder / "clean_lgbm.skops")
    out["clean lgbm in skops"] = (folder / "clean_lgbm.skops", "skops", [])
    forged = _skops_handle(folder / "clean_lgbm.skops", folder / "lgbm_loop.skops",
                           _lgbm_forged(clf.booster_.model_to_string(), "loop to the root"))
    out["lgbm in skops loop to the root"] = (forged, "skops", [
        "lgbm_loop.skops", "LightGBM booster", "Tree=0", "leads back to the root"])
    return {"files": out, "X": X, "rows": folder / "rows.npy", "models": models,
            "boosters": boosters, "clf": clf}


def _trusted(path):
    import skops.io as sio

    return sio.get_untrusted_types(file=str(path))


# --------------------------------------------------------------------------- the refusals


def test_forged_tree_files_are_refused_in_one_line_before_anything_runs(files):
    """Every forged file through ``load_model`` in a child (a hang or a crash fails the test
    instead of stopping it): a DataError of one line naming the file, the tree and what is
    wrong, with no estimator handed to the audit (``from_estimator``) and no LightGBM
    booster built."""
    forged = {name: (str(path), kind) for name, (path, kind, what) in files["files"].items()
              if what}
    proc = _python(f"""
        import json
        import lightgbm, skops.io as sio
        import sklearn.calibration, sklearn.ensemble, sklearn.pipeline  # imports aside
        import faux.audit.loaders.load_skops as ls, faux.audit.loaders.tree_check
        import faux.audit.loaders.models as models, faux.audit.loaders.target as target
        ran = []
        for mod in (ls, target):
            mod.from_estimator = lambda *a, _f=mod.from_estimator, **k: ran.append(1) or _f(*a, **k)
        for cls_attr in ("__init__", "__setstate__"):
            orig = getattr(lightgbm.Booster, cls_attr)
            setattr(lightgbm.Booster, cls_attr,
                    lambda self, *a, _o=orig, **k: ran.append(2) or _o(self, *a, **k))
        out = {{}}
        for name, (path, kind) in {forged!r}.items():
            trusted = sio.get_untrusted_types(file=path) if kind == "skops" else ()
            ran.clear()
            try:
                models.load_model(path, 4, trusted_types=trusted)
                out[name] = ["loaded", ran[:]]
            except Exception as err:
                out[name] = [type(err).__name__ + ": " + str(err), ran[:]]
        print(json.dumps(out))
    """, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout)
    assert sorted(out) == sorted(forged)
    for name, (msg, ran) in out.items():
        assert msg.startswith("DataError: ") and "\n" not in msg, (name, msg)
        for part in files["files"][name][2]:
            assert part in msg, (name, part, msg)
        assert ran == [], (name, ran)


def test_control_forged_trees_hang_or_crash_the_plain_library(files):
    """The forged files are live: each is loaded by its own library (``skops.io.load`` with
    its types trusted, ``lightgbm.Booster``) and asked for predictions on the training rows
    in a forked child that, like ``faux audit``, handles SIGINT and SIGTERM in Python. A
    child still running after a few seconds is sent both, and killed if it is still running
    ("hang": the handlers never run while C code loops); one killed by a signal of its own
    crashed. (The children expected to hang are given 3 s once the others have ended.) The clean files, walked the same way, finish (so the harness itself neither
    hangs nor crashes)."""
    names = [*CONTROLS, "clean skops DecisionTreeClassifier",
             "clean skops HistGradientBoostingClassifier", "clean lgbm numeric",
             "clean lgbm in skops"]
    todo = {n: (str(files["files"][n][0]), files["files"][n][1]) for n in names}
    proc = _python(f"""
        import json, os, signal, sys, time
        import numpy as np
        import lightgbm, skops.io as sio, sklearn.ensemble, sklearn.tree

        X = np.load({str(files["rows"])!r})

        def walk(path, kind):
            for sig in (signal.SIGINT, signal.SIGTERM):
                signal.signal(sig, lambda signum, frame: sys.exit(128 + signum))
            if kind == "lgbm":
                return lightgbm.Booster(model_file=path).predict(X)
            model = sio.load(path, trusted=sio.get_untrusted_types(file=path))
            return model.predict(X)

        kids = {{}}
        for name, (path, kind) in {todo!r}.items():
            pid = os.fork()
            if pid == 0:
                try:
                    walk(path, kind)
                    os._exit(0)
                except BaseException:
                    os._exit(3)
            kids[name] = pid
        out, pending, t0 = {{}}, dict(kids), time.monotonic()
        hangs = {sorted(n for n, v in CONTROLS.items() if v == "hang")!r}
        while pending and time.monotonic() - t0 < 60:
            for name, pid in list(pending.items()):
                done, status = os.waitpid(pid, os.WNOHANG)
                if done:
                    del pending[name]
                    out[name] = ("crash" if os.WIFSIGNALED(status) else
                                 "done" if os.WEXITSTATUS(status) == 0 else "error")
            if set(pending) <= set(hangs) and time.monotonic() - t0 > 3:
                break  # the others have ended; these have run for 3 s
            time.sleep(0.05)
        for pid in pending.values():  # what a user would try
            os.kill(pid, signal.SIGINT)
            os.kill(pid, signal.SIGTERM)
        time.sleep(0.5)
        for name, pid in pending.items():
            done, status = os.waitpid(pid, os.WNOHANG)
            if not done:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            out[name] = "stopped by SIGINT or SIGTERM" if done else "hang"
        print(json.dumps(out))
    """, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout)
    want = {**CONTROLS, **{n: "done" for n in names if n.startswith("clean")}}
    assert out == want


def test_forged_skops_file_is_refused_by_the_cli_in_one_line(files, tmp_path):
    """``faux audit`` in a child with a timeout: exit 2, one line naming the file and the
    tree, nothing written."""
    path = files["files"]["skops RandomForestClassifier loop to the root"][0]
    X, c = proxy_world(200)
    X.assign(gender=np.array(["f", "m"])[c]).to_csv(tmp_path / "people.csv", index=False)
    proc = subprocess.run(
        [sys.executable, "-m", "faux.audit.cli", "audit", "--model", str(path), "--data",
         str(tmp_path / "people.csv"), "--protected", "gender", "--out", str(tmp_path / "out"),
         "--no-progress"], env=ENV, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2, proc.stderr
    assert len(proc.stderr.splitlines()) == 1, proc.stderr
    assert proc.stderr.startswith("faux audit: error: ") and path.name in proc.stderr
    assert "RandomForestClassifier.estimators_[2].tree_" in proc.stderr
    assert not (tmp_path / "out").exists()


# --------------------------------------------------------------------------- well-formed


def test_well_formed_sklearn_files_load_and_predict_exactly_as_before(files):
    X = files["X"]
    Xn = X.copy()
    Xn[::5, 1] = np.nan
    for name, est in files["models"].items():
        path = files["files"][f"clean skops {name}"][0]
        tm = load_model(path, 4, trusted_types=_trusted(path), exact=False)
        rows = Xn if name.startswith("HistGradient") or name.endswith("NaN") else X
        want = (est.predict_proba(rows)[:, 1] if hasattr(est, "predict_proba")
                else est.predict(rows))
        np.testing.assert_array_equal(tm.proba(rows), want, err_msg=name)


def test_well_formed_lightgbm_files_load_and_predict_exactly_as_before(files):
    import lightgbm as lgb

    X = files["X"]
    for name in ("numeric", "categorical", "linear"):
        path = files["files"][f"clean lgbm {name}"][0]
        tm = load_model(path, 4)
        assert tm.loader == "lightgbm"
        np.testing.assert_array_equal(tm.proba(X), lgb.Booster(model_file=path).predict(X),
                                      err_msg=name)
    path = files["files"]["clean lgbm in skops"][0]
    tm = load_model(path, 4, trusted_types=_trusted(path))
    np.testing.assert_array_equal(tm.proba(X), files["clf"].predict_proba(X)[:, 1])


# --------------------------------------------------------------------------- the check


def test_large_forests_and_trees_are_checked_whole():
    """A forest of 300 trees of some 6,500 nodes each, its last tree forged: the walk reaches
    and refuses it; a million-node tree numbered in random order (the pointer-doubling path)
    passes. (Their speed: bench/tree_check.py.)"""
    from sklearn.ensemble import RandomForestClassifier

    rng = np.random.default_rng(0)
    X = rng.normal(size=(20_000, 8))
    y = (X[:, 0] + rng.normal(size=len(X)) > 0).astype(int)
    forest = RandomForestClassifier(1, random_state=0).fit(X, y)
    one = forest.estimators_[0]
    assert one.tree_.node_count > 5000
    forest.estimators_ = [copy.deepcopy(one) for _ in range(300)]
    forest.estimators_[-1].tree_ = _forged_tree(one.tree_, _loop_to_parent)
    with pytest.raises(TreeError, match=r"estimators_\[299\]\.tree_: node \d+ is the child"):
        estimator_trees(forest)
    forest.estimators_[-1] = one
    assert estimator_trees(forest) == 300

    n = 2**20 - 1
    i = np.arange(n)
    left, right = np.where(2 * i + 1 < n, 2 * i + 1, -1), np.where(2 * i + 2 < n, 2 * i + 2, -1)
    new = np.concatenate([[0], 1 + rng.permutation(n - 1)])  # node i is called new[i]
    split = left >= 0
    L, R = np.full(n, -1), np.full(n, -1)
    L[new[split]], R[new[split]] = new[left[split]], new[right[split]]
    check_tree(L, R, L < 0, feature=np.zeros(n, int), n_features=1, threshold=np.zeros(n),
               value=np.zeros((n, 1, 2)))


@pytest.mark.parametrize("case,left,right,what", [
    ("no nodes", [], [], "no nodes"),
    ("child out of range", [1, -1, -1], [7, -1, -1], "node 0's right child is 7, outside"),
    ("negative child", [1, -1, -1], [-3, -1, -1], "right child is -3"),
    ("self loop", [1, -1, 2], [2, -1, 2], "node 2 is the child of both node 0 and node 2"),
    ("loop to the root", [1, 0, -1], [2, 2, -1], "node 1 leads back to the root"),
    ("shared branch", [1, 3, -1, -1], [2, 3, -1, -1], "node 3 is the child of both"),
    ("orphan", [1, -1, -1, -1], [2, -1, -1, -1], "node 3 is no node's child"),
    ("loop apart", [1, -1, -1, 4, 3, -1, -1], [2, -1, -1, 5, 6, -1, -1],
     "node 3 is on a loop the root does not reach"),
])
def test_check_tree_refuses_each_broken_shape(case, left, right, what):
    left, right = np.array(left, dtype=int), np.array(right, dtype=int)
    with pytest.raises(TreeError, match=what):
        check_tree(left, right, left == -1)


def test_check_tree_checks_features_thresholds_and_leaf_values():
    left, right = np.array([1, -1, -1]), np.array([2, -1, -1])
    leaf = left == -1
    ok = dict(feature=[1, -2, -2], n_features=2, threshold=[np.inf, -2, -2],
              value=np.zeros((3, 1, 2)))
    check_tree(left, right, leaf, **ok)  # +inf: scikit-learn's split of missing values
    for change, what in [({"feature": [2, -2, -2]}, "splits on feature 2, outside the 2"),
                         ({"feature": [-1, -2, -2]}, "feature -1"),
                         ({"threshold": [np.nan, 0, 0]}, "threshold is NaN"),
                         ({"value": np.array([[[0, 0]], [[np.inf, 0]], [[0, 0]]])},
                          "node 1's value is not finite")]:
        with pytest.raises(TreeError, match=what):
            check_tree(left, right, leaf, **{**ok, **change})
    check_tree(left, right, leaf, **{**ok, "value": np.array([[[np.nan, 0]], [[0, 0]],
                                                                [[0, 0]]])})  # not a leaf


def test_sklearn_tree_adapter_refuses_inconsistent_counts_and_leaf_marks(files):
    from faux.audit.loaders.tree_check import sklearn_tree

    tree = files["models"]["DecisionTreeClassifier"].tree_
    sklearn_tree(tree, 4, 1, 2)
    leaf = int(np.flatnonzero(tree.children_left == -1)[0])
    half = _forged_tree(tree, lambda s: s["nodes"]["right_child"].__setitem__(leaf, 1))
    with pytest.raises(TreeError, match=f"node {leaf} has children -1 and 1"):
        sklearn_tree(half)
    with pytest.raises(TreeError, match="reads 4 features, its estimator 5"):
        sklearn_tree(tree, 5)
    with pytest.raises(TreeError, match="classes per output"):
        sklearn_tree(tree, 4, 1, 3)


def test_ensembles_must_agree_with_their_trees_on_the_width(files):
    """A forest and gradient boosting call their trees without validating the rows again
    (gradient boosting validates them against its first tree only)."""
    for name in ("RandomForestClassifier", "GradientBoostingClassifier"):
        est = copy.deepcopy(files["models"][name])
        sub = est.estimators_.flat[1] if name.startswith("Gradient") else est.estimators_[1]
        sub.n_features_in_ = 9
        with pytest.raises(TreeError, match="reads 9 features"):
            estimator_trees(est)
    gb = copy.deepcopy(files["models"]["GradientBoostingClassifier"])
    gb.estimators_ = np.concatenate([gb.estimators_, gb.estimators_], axis=1)
    with pytest.raises(TreeError, match=r"estimators_ has shape \(6, 2\) for 1 trees"):
        estimator_trees(gb)


def test_hist_boosting_categorical_splits_and_preprocessor_are_checked(files):
    from faux.audit.loaders.tree_check import hist_predictor

    est = copy.deepcopy(files["models"]["HistGradientBoostingClassifier categorical"])
    cats = est._bin_mapper.is_categorical_
    assert estimator_trees(est) == len(est._predictors)
    pred = est._predictors[0][0]
    numeric = int(np.flatnonzero((pred.nodes["is_leaf"] == 0)
                                 & (pred.nodes["is_categorical"] == 0))[0])
    pred.nodes["is_categorical"][numeric] = 1
    with pytest.raises(TreeError, match=f"node {numeric} splits on feature .* by category"):
        hist_predictor(pred, 4, cats)
    pred.nodes["is_categorical"][numeric] = 0
    hist_predictor(pred, 4, cats)
    name, trans, mask = est._preprocessor.transformers_[1]
    mask = mask.copy()
    mask[np.flatnonzero(mask)[0]] = False  # the encoder would hand on 3 columns, not 4
    est._preprocessor.transformers_[1] = (name, trans, mask)
    with pytest.raises(TreeError, match="_preprocessor is not the column encoder"):
        estimator_trees(est)


@pytest.mark.parametrize("booster,change,what", [
    ("categorical", {"cat_boundaries": ["1"]}, "cat_boundaries do not cut"),
    ("numeric", {"threshold": ["nan"]}, "split 0's threshold is NaN"),
    ("numeric", {"leaf_value": ["nan"]}, "leaf 0's value is not finite"),
    ("linear", {"leaf_const": ["inf"]}, "leaf_const or leaf_coeff that is not finite"),
    ("numeric", {"split_feature": ["4"]}, "entry outside"),  # the check before this one
])
def test_lightgbm_check_refuses_bad_categories_and_values(files, booster, change, what):
    from faux.audit.loaders.lightgbm_file import Malformed, check_text

    text = files["boosters"][booster].model_to_string()
    arr = _lgbm_arrays(text, 0)
    edit = {k: v + arr[k][len(v):] for k, v in change.items()}
    with pytest.raises(Malformed, match=what):
        check_text(_lgbm_edit(text, 0, **edit).encode())


def test_lightgbm_skops_booster_text_is_checked_before_lightgbm_parses_it(files, tmp_path):
    """The model text of a booster in a skops file goes to LightGBM's parser as skops
    builds the booster: a text that spins the parser is refused first (in a child, under a
    timeout)."""
    bad = _skops_handle(files["files"]["clean lgbm in skops"][0], tmp_path / "nul.skops",
                        "tree\n\0")
    proc = _python(f"""
        import skops.io as sio
        from faux.audit.loaders.models import load_model
        path = {str(bad)!r}
        try:
            load_model(path, 4, trusted_types=sio.get_untrusted_types(file=path))
        except Exception as err:
            print(type(err).__name__ + ": " + str(err))
    """, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.startswith("DataError: nul.skops holds a LightGBM booster")
    assert "NUL" in proc.stdout and len(proc.stdout.splitlines()) == 1
