#pragma once
// The runs of the run store in a sortable table, refreshed on demand and after every job.

#include <QWidget>

class QLabel;
class QSortFilterProxyModel;
class QTableView;

namespace ui {

class RunsModel;

class RunsPage : public QWidget {
    Q_OBJECT

public:
    explicit RunsPage(const QString &storePath, QWidget *parent = nullptr);

    void setStorePath(const QString &storePath);
    QString storePath() const { return m_storePath; }
    RunsModel *model() const { return m_model; }
    QSortFilterProxyModel *proxyModel() const { return m_proxy; }
    QTableView *view() const { return m_view; }

public Q_SLOTS:
    /// Reads the runs again. A missing store file is an empty list; an unreadable one says why.
    void refresh();

Q_SIGNALS:
    void statusMessage(const QString &text);

private:
    QString m_storePath;
    RunsModel *m_model = nullptr;
    QSortFilterProxyModel *m_proxy = nullptr;
    QTableView *m_view = nullptr;
    QLabel *m_summary = nullptr;
};

} // namespace ui
