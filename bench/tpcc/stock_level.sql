-- TPC-C Stock-Level (clause 2.8), read-only: distinct items of the
-- district's last 20 orders whose stock is below a threshold of 10-20.
-- The terminal's district is fixed per client (clause 2.8.1.2).
\set w_id :client_id % :warehouses + 1
\set d_id (:client_id / :warehouses) % 10 + 1
\set threshold random(10, 20)
BEGIN;
SELECT d_next_o_id FROM district WHERE d_w_id = :w_id AND d_id = :d_id \gset
SELECT count(DISTINCT s_i_id) AS low_stock
  FROM order_line JOIN stock ON s_w_id = ol_w_id AND s_i_id = ol_i_id
 WHERE ol_w_id = :w_id AND ol_d_id = :d_id
   AND ol_o_id >= :d_next_o_id::int - 20 AND ol_o_id < :d_next_o_id::int
   AND s_quantity < :threshold::int \gset
COMMIT;
