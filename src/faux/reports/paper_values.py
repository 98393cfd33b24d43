"""The paper's reported numbers, to print beside ours (Castiglione et al. 2022)."""

TABLE1_COLUMNS = {
    # column: (xc, xy, bias, fusion)
    "Synthetic-1": ("magic", "backache", 0.5, "outer"),
    "Synthetic-2": ("magic", "backache", 0.5, "concat"),
    "Synthetic-3": ("magic", "backache", 1.0, "outer"),
    "Synthetic-4": ("magic", "backache", 1.0, "concat"),
    "Synthetic-5": ("australian", "credit_g", 0.5, "outer"),
    "Synthetic-6": ("australian", "credit_g", 0.5, "concat"),
    "Synthetic-7": ("australian", "credit_g", 1.0, "outer"),
    "Synthetic-8": ("australian", "credit_g", 1.0, "concat"),
}

# Table 1: (mean, std) per method, columns Synthetic-1..8 in order.
TABLE1 = {
    "fta": [(.307, 0), (.306, 0), (.307, 0), (.307, 0), (.466, 0), (.293, 0), (.355, 0), (.309, 0)],
    "fta_lin": [(.402, 0), (.683, .003), (.451, .001), (.455, .001), (.709, 0), (.658, 0),
                (.672, 0), (.612, 0)],
    "unfair_map": [(.407, 0), (.400, 0), (.576, 0), (.820, 0), (.571, 0), (.653, 0), (.687, 0),
                   (.732, 0)],
    "fliptest": [(.598, .285), (.880, .015), (.433, .259), (.633, .109), (.600, .148),
                 (.678, .056), (.701, .209), (.732, .132)],
    "faux": [(.332, .004), (.998, .001), (.311, .002), (1.0, 0), (.615, .032), (.937, .005),
             (.564, .014), (.997, .001)],
    "faux_ng": [(.876, .015), (.999, .001), (.978, .023), (1.0, 0), (.815, .015), (.947, .006),
                (.910, .019), (.998, .001)],
    "faux_ig": [(.717, .031), (.998, 0), (.937, .012), (1.0, 0), (.886, .015), (.944, .002),
                (.979, .007), (.999, .001)],
    "lic_ub": [(.998, None), (.999, None), (1.0, None), (1.0, None), (.965, None), (.966, None),
               (.999, None), (.999, None)],
}



def table1_prevalence_caps() -> dict[str, float]:
    """The highest positive rate each Table 1 column can have had: the lowest AP the paper
    reports in the column (any method), through ``faux.metrics.ranking.prevalence_cap``."""
    from faux.metrics.ranking import prevalence_cap

    return {col: prevalence_cap(min(TABLE1[m][i][0] for m in TABLE1))
            for i, col in enumerate(TABLE1_COLUMNS)}


# Table 3: NDCG of transparency reports, (mean, std).
TABLE3 = {
    "adult": {"fliptest": (.810, .150), "faux": (.802, .058), "faux_ng": (.807, .105),
              "faux_ig": (.896, .037)},
    "ssl": {"fliptest": (.840, .136), "faux": (.796, .098), "faux_ng": (.884, .119),
            "faux_ig": (.958, .006)},
    "bank": {"fliptest": (.752, .108), "faux": (.798, .047), "faux_ng": (.789, .058),
             "faux_ig": (.814, .058)},
}

# Table 4: (params mean, params std) in thousands; (time mean, time std) in seconds.
TABLE4 = {
    "adult": {"fliptest": ((220, 187), (1012, 532)), "faux": ((13, 8), (12, 5))},
    "ssl": {"fliptest": ((154, 150), (1086, 580)), "faux": ((7, 6), (90, 23))},
    "bank": {"fliptest": ((206, 159), (444, 204)), "faux": ((13, 10), (15, 4))},
}

# Table 2: CVAE model scores.
TABLE2_MODEL_SCORE = {"backache": .545, "credit_g": .657, "australian": .721, "wdbc": .815,
                      "magic": .987}
