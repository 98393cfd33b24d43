import pandas as pd
import pytest

from faux.studies.fig8 import CSV_COLUMNS, QUICK, run_fig8

# small generators that still carry the labels (magic's c is readable at AUC ~0.8)
SMALL = {"magic": {"hidden": 64, "depth": 2, "latent_dim": 3, "max_steps": 600,
                   "batch_size": 256, "patience": None},
         "backache": {"hidden": 32, "depth": 2, "latent_dim": 3, "max_steps": 300,
                      "patience": None}}


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("fig8")
    cache = tmp_path_factory.getbasetemp() / "faux-cache"
    df = run_fig8(out / "figures", out / "results", n_train=3000, n_test=1500, width=64, depth=2,
                  epochs=15, generator_cfgs=SMALL, cache_dir=cache, seed=0)
    return out, df


def test_outputs_written(small_run):
    out, df = small_run
    assert (out / "figures" / "fig8.png").stat().st_size > 10_000
    csv = pd.read_csv(out / "results" / "fig8.csv")
    assert list(csv.columns[: len(CSV_COLUMNS)]) == CSV_COLUMNS
    assert len(csv) == 6 and set(csv.fusion) == {"outer", "concat"}
    assert csv.positive_rate.between(0, 1).all() and (csv.n == 1500).all()
    assert (csv.ifs_median <= csv.ifs_p95).all()


@pytest.mark.parametrize("fusion", ["outer", "concat"])
def test_mean_ifs_grows_with_bias(small_run, fusion):
    _, df = small_run
    m = df[df.fusion == fusion].sort_values("bias").ifs_mean.tolist()
    assert m[0] < m[1] < m[2], m
    pr = df[df.fusion == fusion].sort_values("bias").positive_rate.tolist()
    assert pr[0] < pr[2]


def test_bad_biases(tmp_path):
    from faux.errors import ConfigError

    with pytest.raises(ConfigError, match="biases"):
        run_fig8(tmp_path, tmp_path, biases=(0.0, 2.0), generator_cfgs=SMALL)


@pytest.mark.slow
def test_quick_profile_grows_with_bias(tmp_path):
    kw = dict(QUICK)
    df = run_fig8(tmp_path, tmp_path, **kw)
    for fusion in ("outer", "concat"):
        m = df[df.fusion == fusion].sort_values("bias").ifs_mean.tolist()
        assert m[0] < m[1] < m[2], (fusion, m)


def test_fig8_builds_the_readings_cvaes():
    """Fig. 8 runs under the reading's CVAE settings (latent size, KL weight) and decoding,
    as Table 1 does, and keeps its own k of the threshold rule."""
    from pathlib import Path

    from hydra import compose, initialize_config_dir
    from hydra.core.hydra_config import HydraConfig
    from omegaconf import OmegaConf, open_dict

    import faux.run  # noqa: F401  (registers the config resolvers)
    from faux.studies.fig8 import Settings

    conf = Path(__file__).resolve().parents[1] / "conf"
    with initialize_config_dir(config_dir=str(conf), version_base="1.3"):
        cfg = compose("config", overrides=["experiment=fig8", "reading=p30_softmax_beta1",
                                           "synthetic.threshold_k=2.5"],
                      return_hydra_config=True)
        HydraConfig.instance().set_config(cfg)
        with open_dict(cfg):
            del cfg["hydra"]
        plain = OmegaConf.to_container(cfg, resolve=True)
    s = Settings.from_config(plain)
    assert s.generator_cfgs and all(c["beta"] == 1.0 for c in s.generator_cfgs.values())
    assert set(s.generator_cfgs) == set(s.pair)
    assert s.decoding == "softmax" and s.k == 2.5
