"""Generate the demo arXiv metadata snapshot (Kaggle ``arxiv-metadata-oai-snapshot`` format).

Why generated: the real snapshot is 4 GB; the offline demo needs a few thousand papers whose
titles and abstracts are real English with field-specific vocabulary (so Jensen-Shannon
neighbours are meaningful), and whose category sizes straddle the demo's ``max_category_size``
(150): big categories (cs.LG, hep-th, ...) are dropped, small ones select papers. Sentences are
hand-written templates filled from hand-written topic lexicons, so the text reads as English
abstracts without copying any real paper. Deterministic for a seed:

    python workflow/scripts/make_demo_arxiv.py --papers 2400 --seed 0 \
        --out data/demo/arxiv/arxiv-metadata-oai-snapshot.json
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Sequence
from pathlib import Path

# category -> (weight, topics, objects, methods, properties). Weight ~ relative size.
FIELDS: dict[str, tuple[float, list[str], list[str], list[str], list[str]]] = {
    "math.AG": (1.0, ["algebraic varieties", "moduli spaces of curves", "toric degenerations", "Hodge structures"],
                ["projective surfaces", "coherent sheaves", "line bundles", "rational curves", "Calabi-Yau threefolds"],
                ["intersection theory", "deformation theory", "birational geometry", "derived categories"],
                ["the Picard group", "the canonical divisor", "the Chow ring", "semistability"]),
    "math.NT": (1.0, ["elliptic curves", "modular forms", "L-functions", "Diophantine equations"],
                ["Galois representations", "number fields", "class groups", "prime gaps", "Dirichlet characters"],
                ["the circle method", "sieve methods", "p-adic analysis", "the trace formula"],
                ["the rank", "the conductor", "the special values", "the distribution of zeros"]),
    "math.CO": (1.2, ["extremal graph theory", "random graphs", "Ramsey theory", "matroids"],
                ["hypergraphs", "spanning trees", "permutations", "set systems", "Latin squares"],
                ["the probabilistic method", "the container method", "generating functions", "bijective proofs"],
                ["the chromatic number", "the independence number", "the number of perfect matchings", "the Turan density"]),
    "math.PR": (1.1, ["stochastic processes", "random walks", "interacting particle systems", "percolation"],
                ["Brownian motion", "martingales", "Markov chains", "random matrices", "branching processes"],
                ["coupling arguments", "large deviation estimates", "stochastic calculus", "concentration inequalities"],
                ["the mixing time", "the scaling limit", "the hitting probability", "the critical exponent"]),
    "math.AP": (1.1, ["nonlinear elliptic equations", "dispersive equations", "fluid dynamics", "free boundary problems"],
                ["weak solutions", "the Navier-Stokes equations", "Schrodinger equations", "parabolic systems", "Sobolev spaces"],
                ["energy estimates", "variational methods", "Strichartz estimates", "blow-up analysis"],
                ["global well-posedness", "regularity of solutions", "the decay rate", "uniqueness"]),
    "math.OC": (0.7, ["convex optimization", "optimal control", "stochastic approximation", "variational inequalities"],
                ["first-order methods", "saddle point problems", "linear quadratic regulators", "feasible sets", "Lagrangian relaxations"],
                ["proximal gradient methods", "dual averaging", "Lyapunov analysis", "interior point methods"],
                ["the convergence rate", "the optimality gap", "the iteration complexity", "robust stability"]),
    "math.DG": (0.7, ["Riemannian manifolds", "minimal surfaces", "Ricci flow", "symplectic geometry"],
                ["Einstein metrics", "geodesics", "Kahler manifolds", "curvature bounds", "harmonic maps"],
                ["the maximum principle", "comparison geometry", "gauge theory", "geometric analysis"],
                ["the scalar curvature", "the volume growth", "rigidity", "the first eigenvalue"]),
    "math.GT": (0.5, ["knot theory", "three-manifolds", "mapping class groups", "hyperbolic geometry"],
                ["knot invariants", "Heegaard splittings", "braids", "surface bundles", "Dehn fillings"],
                ["Floer homology", "skein relations", "normal surface theory", "train track maps"],
                ["the genus", "the hyperbolic volume", "the Jones polynomial", "fibredness"]),
    "math.RT": (0.4, ["Lie algebras", "quantum groups", "category O", "reductive groups"],
                ["irreducible modules", "Weyl groups", "Hecke algebras", "highest weight representations", "crystal bases"],
                ["character formulas", "geometric Satake", "categorification", "Kazhdan-Lusztig theory"],
                ["the decomposition numbers", "the tensor product multiplicities", "the Schur functors", "unitarity"]),
    "math.ST": (0.6, ["nonparametric estimation", "high-dimensional inference", "hypothesis testing", "Bayesian asymptotics"],
                ["sparse regression models", "covariance matrices", "empirical processes", "kernel density estimators", "mixture models"],
                ["minimax lower bounds", "the bootstrap", "penalized likelihood", "posterior contraction"],
                ["the minimax risk", "consistency", "the asymptotic variance", "the false discovery rate"]),
    "math-ph": (0.6, ["integrable systems", "spectral theory of Schrodinger operators", "quantum spin chains", "random operators"],
                ["Lax pairs", "Jacobi matrices", "Bethe ansatz solutions", "Hamiltonians", "Anderson models"],
                ["the inverse scattering transform", "Riemann-Hilbert analysis", "functional renormalization", "semiclassical analysis"],
                ["the spectral gap", "the density of states", "localization", "the conserved quantities"]),
    "hep-th": (3.0, ["string compactifications", "the AdS/CFT correspondence", "supersymmetric gauge theories", "black hole entropy"],
               ["conformal field theories", "D-branes", "scattering amplitudes", "Wilson loops", "holographic duals"],
               ["the conformal bootstrap", "localization techniques", "the renormalization group", "effective field theory"],
               ["the central charge", "the entanglement entropy", "anomalies", "the operator spectrum"]),
    "hep-ph": (2.0, ["physics beyond the Standard Model", "neutrino oscillations", "dark matter models", "collider phenomenology"],
               ["Higgs couplings", "heavy quarks", "parton distributions", "axion-like particles", "sterile neutrinos"],
               ["perturbative QCD", "global fits", "Monte Carlo event generators", "lattice inputs"],
               ["the production cross section", "the decay width", "the mixing angle", "the relic abundance"]),
    "gr-qc": (1.2, ["gravitational waves", "black hole perturbations", "cosmological models", "modified gravity"],
              ["compact binaries", "quasinormal modes", "wormholes", "scalar-tensor theories", "event horizons"],
              ["numerical relativity", "post-Newtonian expansions", "the 3+1 formalism", "perturbation theory"],
              ["the waveform", "the ringdown frequency", "the energy flux", "the stability of the horizon"]),
    "quant-ph": (2.2, ["quantum error correction", "entanglement theory", "quantum algorithms", "open quantum systems"],
                 ["qubits", "stabilizer codes", "quantum channels", "trapped ions", "photonic circuits"],
                 ["tensor network simulations", "quantum process tomography", "variational algorithms", "master equations"],
                 ["the logical error rate", "the fidelity", "the entanglement negativity", "the decoherence time"]),
    "cond-mat.str-el": (1.3, ["strongly correlated electrons", "quantum spin liquids", "the Hubbard model", "heavy fermion compounds"],
                        ["Mott insulators", "frustrated magnets", "cuprates", "Kitaev materials", "fractional excitations"],
                        ["dynamical mean-field theory", "density matrix renormalization group", "quantum Monte Carlo", "slave boson approaches"],
                        ["the magnetic order", "the spin gap", "the phase diagram", "the quasiparticle weight"]),
    "cond-mat.mtrl-sci": (2.5, ["two-dimensional materials", "thermoelectric materials", "battery cathodes", "defects in semiconductors"],
                          ["thin films", "perovskites", "transition metal dichalcogenides", "grain boundaries", "alloys"],
                          ["density functional theory", "molecular dynamics", "X-ray diffraction", "high-throughput screening"],
                          ["the band gap", "the thermal conductivity", "the formation energy", "the elastic moduli"]),
    "cond-mat.soft": (0.6, ["active matter", "colloidal suspensions", "polymer networks", "liquid crystals"],
                      ["self-propelled particles", "hydrogels", "vesicles", "granular packings", "nematic droplets"],
                      ["Brownian dynamics simulations", "coarse-grained models", "rheometry", "hydrodynamic theory"],
                      ["the viscoelastic response", "the jamming transition", "the phase separation", "the persistence length"]),
    "astro-ph.GA": (2.2, ["galaxy evolution", "the interstellar medium", "star formation", "active galactic nuclei"],
                    ["spiral galaxies", "molecular clouds", "stellar streams", "supermassive black holes", "dwarf galaxies"],
                    ["integral field spectroscopy", "cosmological simulations", "radio interferometry", "photometric surveys"],
                    ["the star formation rate", "the metallicity gradient", "the gas fraction", "the rotation curve"]),
    "astro-ph.SR": (0.9, ["stellar evolution", "the solar corona", "asteroseismology", "binary stars"],
                    ["red giants", "white dwarfs", "solar flares", "massive stars", "eclipsing binaries"],
                    ["spectropolarimetry", "stellar evolution codes", "light curve modelling", "magnetohydrodynamic simulations"],
                    ["the mass loss rate", "the rotation period", "the surface magnetic field", "the oscillation frequencies"]),
    "physics.optics": (0.9, ["nonlinear optics", "metasurfaces", "ultrafast lasers", "integrated photonics"],
                       ["optical resonators", "waveguides", "frequency combs", "plasmonic nanostructures", "optical fibers"],
                       ["finite-difference time-domain simulations", "pump-probe spectroscopy", "coupled-mode theory", "interferometric measurements"],
                       ["the quality factor", "the conversion efficiency", "the group velocity dispersion", "the transmission spectrum"]),
    "physics.flu-dyn": (0.8, ["turbulence", "boundary layers", "multiphase flows", "convection"],
                        ["vortex rings", "droplets", "channel flows", "jets", "wakes behind cylinders"],
                        ["direct numerical simulation", "particle image velocimetry", "linear stability analysis", "large eddy simulation"],
                        ["the drag coefficient", "the Nusselt number", "the energy spectrum", "the transition Reynolds number"]),
    "physics.bio-ph": (0.35, ["molecular motors", "cell mechanics", "protein folding", "membrane biophysics"],
                       ["actin filaments", "lipid bilayers", "kinesin", "chromatin fibers", "ion channels"],
                       ["single-molecule force spectroscopy", "coarse-grained simulations", "optical tweezers", "fluorescence microscopy"],
                       ["the stall force", "the bending rigidity", "the folding rate", "the diffusion coefficient"]),
    "physics.soc-ph": (0.35, ["opinion dynamics", "epidemic spreading", "urban mobility", "collaboration networks"],
                       ["social networks", "agent-based models", "contact patterns", "citation graphs", "commuting flows"],
                       ["mean-field approximations", "network science tools", "empirical data analysis", "stochastic simulations"],
                       ["the epidemic threshold", "the degree distribution", "the consensus time", "the clustering coefficient"]),
    "physics.atom-ph": (0.3, ["ultracold atoms", "atomic clocks", "Rydberg atoms", "precision spectroscopy"],
                        ["optical lattices", "Bose-Einstein condensates", "hyperfine transitions", "trapped molecules", "magneto-optical traps"],
                        ["laser cooling", "Ramsey interferometry", "ab initio calculations", "Feshbach resonances"],
                        ["the transition frequency", "the scattering length", "the systematic uncertainty", "the coherence time"]),
    "physics.comp-ph": (0.3, ["molecular simulation", "lattice Boltzmann methods", "electronic structure codes", "Monte Carlo sampling"],
                        ["force fields", "GPU kernels", "sparse solvers", "mesh refinement schemes", "neural network potentials"],
                        ["parallel algorithms", "multigrid methods", "enhanced sampling", "automatic differentiation"],
                        ["the computational cost", "the numerical stability", "the parallel efficiency", "the sampling error"]),
    "cs.LG": (3.5, ["deep learning", "reinforcement learning", "representation learning", "generalization theory"],
              ["neural networks", "transformers", "policy gradients", "graph neural networks", "diffusion models"],
              ["stochastic gradient descent", "contrastive learning", "meta-learning", "self-supervised pretraining"],
              ["the generalization error", "the sample complexity", "the training stability", "the robustness to distribution shift"]),
    "cs.CL": (1.8, ["machine translation", "question answering", "language modelling", "sentiment analysis"],
              ["pretrained language models", "text embeddings", "parallel corpora", "dialogue systems", "named entity recognizers"],
              ["instruction tuning", "retrieval augmentation", "beam search decoding", "multilingual transfer"],
              ["the BLEU score", "the factual accuracy", "the perplexity", "the zero-shot performance"]),
    "cs.CV": (1.6, ["object detection", "image segmentation", "3D reconstruction", "video understanding"],
              ["convolutional networks", "vision transformers", "point clouds", "depth maps", "optical flow fields"],
              ["data augmentation", "self-attention", "multi-view geometry", "knowledge distillation"],
              ["the mean average precision", "the segmentation quality", "the inference speed", "the reconstruction error"]),
    "cs.DS": (0.6, ["graph algorithms", "streaming algorithms", "approximation algorithms", "data structures"],
              ["shortest paths", "sketches", "matchings", "hash tables", "submodular functions"],
              ["randomized rounding", "linear programming relaxations", "dynamic programming", "amortized analysis"],
              ["the approximation ratio", "the space complexity", "the running time", "the update time"]),
    "cs.CR": (0.6, ["applied cryptography", "software security", "privacy-preserving computation", "side-channel attacks"],
              ["encryption schemes", "zero-knowledge proofs", "smart contracts", "malware samples", "authentication protocols"],
              ["formal verification", "fuzzing", "differential privacy", "secure multiparty computation"],
              ["the attack success rate", "the security guarantee", "the privacy loss", "the overhead"]),
    "cs.IR": (0.45, ["information retrieval", "recommender systems", "search engines", "query understanding"],
              ["dense retrievers", "user sessions", "ranking functions", "click logs", "inverted indexes"],
              ["learning to rank", "collaborative filtering", "negative sampling", "query expansion"],
              ["the retrieval accuracy", "the ranking quality", "the recall at cutoff", "the latency"]),
    "cs.LO": (0.3, ["proof theory", "model checking", "type theory", "automated reasoning"],
              ["modal logics", "temporal formulas", "proof assistants", "rewriting systems", "SAT instances"],
              ["cut elimination", "bisimulation", "coinduction", "decision procedures"],
              ["decidability", "the complexity of satisfiability", "soundness", "completeness"]),
    "cs.RO": (0.5, ["robot manipulation", "legged locomotion", "motion planning", "multi-robot coordination"],
              ["robotic arms", "quadruped robots", "grasping policies", "aerial vehicles", "tactile sensors"],
              ["model predictive control", "sim-to-real transfer", "sampling-based planning", "imitation learning"],
              ["the success rate", "the tracking error", "the energy efficiency", "the collision rate"]),
    "q-bio.NC": (0.45, ["neural coding", "synaptic plasticity", "cortical dynamics", "decision making"],
                 ["spiking neurons", "place cells", "recurrent circuits", "dendrites", "population activity"],
                 ["calcium imaging", "mean-field models", "information theory", "electrophysiological recordings"],
                 ["the firing rate", "the correlation structure", "the coding efficiency", "the oscillation power"]),
    "q-bio.PE": (0.35, ["evolutionary dynamics", "population genetics", "epidemiological models", "ecological networks"],
                 ["fitness landscapes", "mutation rates", "host-pathogen systems", "food webs", "microbial communities"],
                 ["coalescent theory", "stochastic birth-death models", "phylogenetic inference", "game theory"],
                 ["the fixation probability", "the basic reproduction number", "the extinction risk", "the genetic diversity"]),
    "q-bio.QM": (0.3, ["bioinformatics pipelines", "single-cell sequencing", "protein structure prediction", "medical imaging"],
                 ["gene expression profiles", "sequence alignments", "cell atlases", "protein complexes", "MRI scans"],
                 ["statistical learning", "clustering algorithms", "Bayesian hierarchical models", "dimensionality reduction"],
                 ["the detection power", "the classification accuracy", "the batch effect", "the reproducibility"]),
    "stat.ME": (0.8, ["causal inference", "survey sampling", "missing data", "clinical trial design"],
                ["observational studies", "instrumental variables", "propensity scores", "longitudinal data", "treatment effects"],
                ["multiple imputation", "doubly robust estimation", "sensitivity analysis", "hierarchical modelling"],
                ["the bias", "the coverage of confidence intervals", "the statistical efficiency", "the type I error"]),
    "econ.EM": (0.3, ["panel data econometrics", "treatment effect estimation", "time series econometrics", "demand estimation"],
                ["difference-in-differences designs", "structural models", "vector autoregressions", "auction data", "synthetic controls"],
                ["generalized method of moments", "quantile regression", "shrinkage estimators", "randomization inference"],
                ["identification", "the asymptotic distribution", "the forecast accuracy", "the size of tests"]),
    "q-fin.ST": (0.25, ["financial time series", "market microstructure", "volatility modelling", "systemic risk"],
                 ["stock returns", "limit order books", "cryptocurrency prices", "credit default swaps", "portfolio weights"],
                 ["GARCH models", "high-frequency data analysis", "extreme value theory", "copula models"],
                 ["the tail dependence", "the realized volatility", "the price impact", "the predictability"]),
}

# Secondary categories plausibly cross-listed with each archive (first is most common).
CROSS: dict[str, list[str]] = {
    "math": ["math-ph", "math.CO", "math.PR", "math.AP", "math.NT", "math.AG", "math.DG", "math.OC", "math.ST", "math.GT", "math.RT"],
    "hep": ["hep-th", "hep-ph", "gr-qc", "quant-ph", "math-ph"],
    "gr": ["gr-qc", "hep-th", "astro-ph.GA", "math.DG"],
    "quant": ["quant-ph", "cond-mat.str-el", "physics.optics", "physics.atom-ph", "cs.IT"],
    "cond": ["cond-mat.str-el", "cond-mat.mtrl-sci", "cond-mat.soft", "physics.comp-ph", "quant-ph", "physics.bio-ph"],
    "astro": ["astro-ph.GA", "astro-ph.SR", "gr-qc", "physics.flu-dyn"],
    "physics": ["physics.optics", "physics.flu-dyn", "physics.comp-ph", "physics.bio-ph", "physics.soc-ph", "physics.atom-ph", "cond-mat.soft", "quant-ph"],
    "cs": ["cs.LG", "cs.CL", "cs.CV", "cs.DS", "cs.CR", "cs.IR", "cs.LO", "cs.RO", "stat.ML", "math.OC"],
    "q": ["q-bio.NC", "q-bio.PE", "q-bio.QM", "physics.bio-ph", "stat.ME", "cs.LG"],
    "stat": ["stat.ME", "math.ST", "stat.ML", "econ.EM", "cs.LG"],
    "econ": ["econ.EM", "stat.ME", "q-fin.ST"],
}

OPENINGS = [
    "We study {topic}, with a focus on {object}.",
    "In this paper we investigate {prop} of {object} in the setting of {topic}.",
    "Understanding {prop} of {object} is a central problem in {topic}.",
    "We develop a new framework for {topic} based on {method}.",
    "This work revisits a classical question about {object} arising in {topic}.",
    "Recent progress in {topic} has raised new questions about {object}.",
]
MIDDLES = [
    "Using {method}, we show that {prop} of {object} can be controlled by a small number of parameters.",
    "Our approach combines {method} with {method2}, which allows us to treat {object2} as well.",
    "We prove that {prop} is stable under small perturbations of {object}.",
    "In contrast to previous work, we do not assume that {object} are homogeneous.",
    "We obtain explicit bounds on {prop} and show that they are sharp in several cases.",
    "The analysis relies on a careful comparison between {object} and {object2}.",
    "As an application, we determine {prop2} for a large family of {object2}.",
    "Numerical experiments confirm that {method} captures {prop} accurately.",
    "We also discuss how {method2} can be used to estimate {prop2}.",
    "A key step is a new estimate for {prop}, obtained via {method}.",
    "We find that {prop} depends strongly on the structure of {object2}.",
    "Our results extend earlier findings on {topic2} to a much broader class of {object}.",
    "Furthermore, we identify a regime in which {prop2} changes qualitatively.",
    "The method is simple to implement and scales to large collections of {object}.",
]
CLOSINGS = [
    "These results suggest new directions for research on {topic}.",
    "We conclude with open problems concerning {prop2}.",
    "Our findings clarify the role of {method} in {topic}.",
    "Code and data accompanying the paper are publicly available.",
    "The results are compared with existing bounds in the literature on {topic2}.",
]
TITLES = [
    "On {prop} of {object}",
    "{Method} for {object} in {topic}",
    "A note on {object} and {prop}",
    "{Prop} of {object} via {method}",
    "New bounds on {prop} for {object}",
    "{Topic}: {method} and {object}",
]
NAMES = ["A. Smith", "B. Kowalski", "C. Nguyen", "D. Rossi", "E. Tanaka", "F. Okafor", "G. Muller",
         "H. Silva", "I. Petrov", "J. Chen", "K. Singh", "L. Garcia", "M. Dubois", "N. Larsen"]


def _cap(s: str) -> str:
    return s[:1].upper() + s[1:]


def _fill(template: str, vocab: dict[str, str]) -> str:
    return template.format(**vocab, **{k.capitalize(): _cap(v) for k, v in vocab.items()})


def _pair(rng: random.Random, first: list[str], second: list[str]) -> tuple[str, str]:
    """Two picks, distinct when possible ("combines X with X" reads badly)."""
    a = rng.choice(first)
    return a, rng.choice([b for b in second if b != a] or second)


def _vocab(rng: random.Random, cats: Sequence[str]) -> dict[str, str]:
    main, other = FIELDS[cats[0]], FIELDS.get(rng.choice(cats), FIELDS[cats[0]])
    v: dict[str, str] = {}
    for slot, k in (("topic", 1), ("object", 2), ("method", 3), ("prop", 4)):
        v[slot], v[slot + "2"] = _pair(rng, main[k], other[k])  # type: ignore[index]
    return v


def _categories(rng: random.Random) -> list[str]:
    names = list(FIELDS)
    primary = rng.choices(names, weights=[FIELDS[n][0] for n in names])[0]
    archive = primary.split(".")[0].split("-")[0]
    pool = [c for c in CROSS.get(archive, []) if c != primary]
    extra = rng.choices([0, 1, 2, 3], weights=[0.35, 0.4, 0.18, 0.07])[0]
    cats = [primary]
    for _ in range(extra):
        c = rng.choice(pool) if pool and rng.random() < 0.8 else rng.choice(names)
        if c not in cats:
            cats.append(c)
    return cats


def make_paper(i: int, rng: random.Random) -> dict[str, object]:
    cats = _categories(rng)
    v = _vocab(rng, [c for c in cats if c in FIELDS])
    sents = [_fill(rng.choice(OPENINGS), v)]
    for t in rng.sample(MIDDLES, rng.randint(3, 5)):
        fresh = _vocab(rng, [c for c in cats if c in FIELDS])
        if fresh["object2"] != v["object"]:
            fresh["object"] = v["object"]  # keep the paper's main object across sentences
        sents.append(_fill(t, fresh | {"topic": v["topic"]}))
    sents.append(_fill(rng.choice(CLOSINGS), v))
    abstract = "  " + "\n".join(" ".join(sents[k:k + 2]) for k in range(0, len(sents), 2)) + "\n"
    authors = rng.sample(NAMES, rng.randint(1, 4))
    year, month = 2007 + i * 17 // 2400 % 17, 1 + i % 12
    pid = f"{year % 100:02d}{month:02d}.{i:05d}"
    return {
        "id": pid, "submitter": authors[0], "authors": ", ".join(authors),
        "title": _fill(rng.choice(TITLES), v), "comments": f"{rng.randint(8, 40)} pages",
        "journal-ref": None, "doi": None, "report-no": None, "categories": " ".join(cats),
        "license": "http://arxiv.org/licenses/nonexclusive-distrib/1.0/", "abstract": abstract,
        "versions": [{"version": "v1", "created": f"Mon, {1 + i % 28} Jan {year} 10:00:00 GMT"}],
        "update_date": f"{year}-{month:02d}-{1 + i % 28:02d}",
        "authors_parsed": [[a.split()[1], a.split()[0], ""] for a in authors],
    }


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--papers", type=int, default=2400)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=Path("data/demo/arxiv/arxiv-metadata-oai-snapshot.json"))
    args = ap.parse_args(argv)
    rng = random.Random(args.seed)
    lines = [json.dumps(make_paper(i, rng), ensure_ascii=False) for i in range(args.papers)]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_suffix(".tmp")
    tmp.write_text("\n".join(lines) + "\n", encoding="utf-8")
    tmp.replace(args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
