"""An ordinal (cumulative-logit, proportional-odds) classifier for the 0-3 relevance scale.

P(y <= k | x) = sigmoid(theta_k - x . beta), with theta_0 < theta_1 < theta_2 kept ordered by
parametrising theta_k = theta_0 + sum_{j<=k} exp(a_j). Fitted by L-BFGS on the negative
log-likelihood plus a ridge penalty on beta.

Why not statsmodels' OrderedModel: it refuses constant columns and its Hessian is singular when
columns are collinear, which is common here (personalities that agree on almost every pair, or a
confidence that is always 100 in a small training part). This implementation drops columns that
are constant in the training part, standardises the rest, and the ridge term (default 1.0, the
same strength as scikit-learn's LogisticRegression C=1) makes the optimum unique under collinearity.
With l2=0 on well-conditioned data it gives OrderedModel's logit estimates.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit


class OrdinalLogit:
    """Cumulative-logit classifier with scikit-learn's fit/predict interface."""

    def __init__(self, l2: float = 1.0, max_iter: int = 500) -> None:
        self.l2 = l2
        self.max_iter = max_iter

    def fit(self, x: np.ndarray, y: np.ndarray) -> OrdinalLogit:
        """Fit on features x (n, p) and ordinal labels y in 0..K-1 (every level present)."""
        y = np.asarray(y, dtype=np.int64)
        self.n_classes_ = int(y.max()) + 1
        x = np.asarray(x, dtype=np.float64)
        self.mean_ = x.mean(axis=0)
        scale = x.std(axis=0)
        self.keep_ = scale > 1e-12
        self.scale_ = np.where(self.keep_, scale, 1.0)
        z = self._standardise(x)
        n_beta, n_cut = z.shape[1], self.n_classes_ - 1
        start = np.zeros(n_beta + n_cut)
        cum = np.cumsum(np.bincount(y, minlength=self.n_classes_))[:-1] / len(y)
        cuts = np.log(cum / (1 - cum))
        start[n_beta] = cuts[0]
        start[n_beta + 1 :] = np.log(np.maximum(np.diff(cuts), 1e-3))
        result = minimize(
            _objective,
            start,
            args=(z, y, n_beta, self.l2),
            jac=True,
            method="L-BFGS-B",
            options={"maxiter": self.max_iter},
        )
        self.coef_ = result.x[:n_beta]
        self.thresholds_ = _thresholds(result.x[n_beta:])
        self.converged_ = bool(result.success)
        return self

    def predict_proba(self, x: np.ndarray) -> np.ndarray:
        """Probability of each level, shape (n, K)."""
        eta = self._standardise(np.asarray(x, dtype=np.float64)) @ self.coef_
        cdf = expit(self.thresholds_[None, :] - eta[:, None])
        cdf = np.hstack([np.zeros((len(eta), 1)), cdf, np.ones((len(eta), 1))])
        return np.diff(cdf, axis=1)

    def predict(self, x: np.ndarray) -> np.ndarray:
        """The most probable level (ties to the lower level)."""
        return np.argmax(self.predict_proba(x), axis=1)

    def _standardise(self, x: np.ndarray) -> np.ndarray:
        return ((x - self.mean_) / self.scale_)[:, self.keep_]


def _thresholds(params: np.ndarray) -> np.ndarray:
    return params[0] + np.concatenate([[0.0], np.cumsum(np.exp(params[1:]))])


def _objective(params: np.ndarray, z: np.ndarray, y: np.ndarray, n_beta: int, l2: float):
    """Penalised negative log-likelihood and its gradient."""
    beta, raw = params[:n_beta], params[n_beta:]
    theta = _thresholds(raw)
    n_cut = len(theta)
    eta = z @ beta
    # Upper and lower cut of each observation's interval; +-inf at the ends of the scale.
    upper = np.where(y < n_cut, theta[np.minimum(y, n_cut - 1)], np.inf) - eta
    lower = np.where(y > 0, theta[np.maximum(y - 1, 0)], -np.inf) - eta
    f_up, f_lo = expit(upper), expit(lower)
    prob = np.maximum(f_up - f_lo, 1e-300)
    d_up, d_lo = f_up * (1 - f_up) / prob, f_lo * (1 - f_lo) / prob
    loss = -np.log(prob).sum() + 0.5 * l2 * beta @ beta
    grad_beta = z.T @ (d_up - d_lo) + l2 * beta
    # d loss / d theta_k, then through theta_k = raw_0 + sum_{1<=j<=k} exp(raw_j).
    grad_theta = -(
        np.bincount(np.minimum(y, n_cut - 1)[y < n_cut], d_up[y < n_cut], minlength=n_cut)
        - np.bincount((y - 1)[y > 0], d_lo[y > 0], minlength=n_cut)
    )
    grad_raw = np.empty_like(raw)
    grad_raw[0] = grad_theta.sum()
    tail = np.cumsum(grad_theta[::-1])[::-1]
    grad_raw[1:] = tail[1:] * np.exp(raw[1:])
    return loss, np.concatenate([grad_beta, grad_raw])
