#pragma once
// The live loss curve: the raw per-step loss drawn light, a debiased exponential moving average
// drawn strong, axes that follow the data, and a legend. Colours come from the palette.

#include <QWidget>

class QCustomPlot;
class QCPGraph;
class QCPItemText;

namespace ui {

class LossPlot : public QWidget {
    Q_OBJECT

public:
    explicit LossPlot(QWidget *parent = nullptr);

    /// Removes every point and restarts the moving average.
    void clear();
    /// The step count of the whole run: the x axis spans it from the start.
    void setTotalSteps(qint64 steps);
    /// Appends one step; call replot() after a batch. Non-finite losses show as gaps.
    void addPoint(double step, double loss);
    /// Appends an evaluation (eval loss at `step`), drawn as marked points joined by a line in a second
    /// colour; its legend entry appears with the first one.
    void addEvalPoint(double step, double loss);
    int evalPointCount() const;
    /// Redraws once (queued, so several calls in one event cost one paint).
    void replot();

    /// Smoothing factor of the moving average, in [0, 1); 0 = none. Applies to later points.
    void setSmoothing(double beta);
    double smoothing() const { return m_beta; }

    int pointCount() const;
    double lastRawLoss() const { return m_lastRaw; }
    double lastSmoothedLoss() const { return m_lastSmoothed; }
    QCustomPlot *plot() const { return m_plot; }

protected:
    void changeEvent(QEvent *event) override;

private:
    void applyPalette();
    void rescale();

    QCustomPlot *m_plot = nullptr;
    QCPGraph *m_raw = nullptr;
    QCPGraph *m_smoothed = nullptr;
    QCPGraph *m_eval = nullptr;
    QCPItemText *m_emptyHint = nullptr;
    qint64 m_totalSteps = 0;
    double m_beta = 0.85;
    double m_ema = 0;
    double m_betaPower = 1; ///< beta^n for the n finite points seen: the debiasing term
    double m_lastRaw = 0;
    double m_lastSmoothed = 0;
    double m_maxStep = 0;
};

} // namespace ui
