-- A read-only report over the TPC-C tables, as an analyst writes one:
-- several statements in one transaction declared READ ONLY (standard SQL),
-- 130,001 rows per warehouse (every customer and stock row).  bench/run.py
-- runs it in a loop on one extra client beside the TPC-C clients
-- (workloads tpcc-w<N>-report), with BEGIN READ ONLY DEFERRABLE for the
-- "report DEFERRABLE" row.
--
-- The report also checks what one consistent state must show, across its
-- statements: W_YTD = sum(D_YTD) (consistency condition 1), and the money
-- Payment added to the warehouses equals what it added to the customers'
-- C_YTD_PAYMENT (loaded at 300,000.00 per warehouse and 10.00 per
-- customer).  A report that saw a Payment in one statement and not in
-- another appends a line to :report_log (heap READ COMMITTED does).
BEGIN READ ONLY;
SELECT sum(w_ytd) AS w_ytd, count(*) AS w_cnt FROM warehouse \gset
SELECT count(*) AS customers, sum(c_ytd_payment) AS c_ytd, sum(c_balance) AS c_balance
  FROM customer \gset
SELECT count(*) AS low_stock, sum(s_ytd) AS s_ytd FROM stock WHERE s_quantity < 20 \gset
SELECT sum(d_ytd) AS d_ytd FROM district \gset
COMMIT;
\set w_paid :w_ytd - 300000 * :w_cnt
\set c_paid :c_ytd - 10 * :customers
\if abs(:w_ytd - :d_ytd) > 0.005 or abs(:w_paid - :c_paid) > 0.005
\shell echo inconsistent w_ytd=:w_ytd d_ytd=:d_ytd w_paid=:w_paid c_paid=:c_paid >> :report_log
\endif
