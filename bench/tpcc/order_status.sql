-- TPC-C Order-Status (clause 2.6), read-only.  60% of customers by last
-- name (position ceil(n/2) by C_FIRST), 40% by C_ID; then the customer's
-- most recent order (orders-by-customer index) and its order lines.
\set w_id :client_id % :warehouses + 1
\set d_id random(1, 10)
\set by_name CASE WHEN random(1, 100) <= 60 THEN 1 ELSE 0 END
\set c_last_n ((random(0, 255) | random(0, 999)) + :c_last_c) % 1000
\set c_id ((random(0, 1023) | random(1, 3000)) + :c_id_c) % 3000 + 1
BEGIN;
\if :by_name
SELECT count(*) AS name_cnt FROM customer
 WHERE c_w_id = :w_id AND c_d_id = :d_id AND c_last = tpcc_lastname(:c_last_n::int) \gset
SELECT c_id FROM customer
 WHERE c_w_id = :w_id AND c_d_id = :d_id AND c_last = tpcc_lastname(:c_last_n::int)
 ORDER BY c_first OFFSET (:name_cnt::int - 1) / 2 LIMIT 1 \gset
\endif
SELECT c_balance, c_first, c_middle, c_last
  FROM customer WHERE c_w_id = :w_id AND c_d_id = :d_id AND c_id = :c_id \gset
SELECT o_id, o_carrier_id, o_entry_d FROM orders
 WHERE o_w_id = :w_id AND o_d_id = :d_id AND o_c_id = :c_id
 ORDER BY o_id DESC LIMIT 1 \gset
SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d FROM order_line
 WHERE ol_w_id = :w_id AND ol_d_id = :d_id AND ol_o_id = :o_id;
COMMIT;
