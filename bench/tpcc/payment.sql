-- TPC-C Payment (clause 2.5), step by step.  85% of payments are for a
-- customer of the home warehouse's district, 15% for a customer of a random
-- district of a remote warehouse (when W > 1); 60% select the customer by
-- last name (the one at position ceil(n/2) by C_FIRST), 40% by C_ID.
\set w_id :client_id % :warehouses + 1
\set d_id random(1, 10)
\set remote CASE WHEN :warehouses > 1 AND random(1, 100) <= 15 THEN 1 ELSE 0 END
\set c_w_id CASE WHEN :remote = 1 THEN (:w_id + random(0, :warehouses - 2)) % :warehouses + 1 ELSE :w_id END
\set c_d_id CASE WHEN :remote = 1 THEN random(1, 10) ELSE :d_id END
\set by_name CASE WHEN random(1, 100) <= 60 THEN 1 ELSE 0 END
\set c_last_n ((random(0, 255) | random(0, 999)) + :c_last_c) % 1000
\set c_id ((random(0, 1023) | random(1, 3000)) + :c_id_c) % 3000 + 1
\set h_cents random(100, 500000)
BEGIN;
UPDATE warehouse SET w_ytd = w_ytd + :h_cents::numeric / 100 WHERE w_id = :w_id;
SELECT w_name, w_street_1, w_street_2, w_city, w_state, w_zip
  FROM warehouse WHERE w_id = :w_id \gset
UPDATE district SET d_ytd = d_ytd + :h_cents::numeric / 100
 WHERE d_w_id = :w_id AND d_id = :d_id;
SELECT d_name, d_street_1, d_street_2, d_city, d_state, d_zip
  FROM district WHERE d_w_id = :w_id AND d_id = :d_id \gset
\if :by_name
SELECT count(*) AS name_cnt FROM customer
 WHERE c_w_id = :c_w_id AND c_d_id = :c_d_id AND c_last = tpcc_lastname(:c_last_n::int) \gset
SELECT c_id FROM customer
 WHERE c_w_id = :c_w_id AND c_d_id = :c_d_id AND c_last = tpcc_lastname(:c_last_n::int)
 ORDER BY c_first OFFSET (:name_cnt::int - 1) / 2 LIMIT 1 \gset
\endif
SELECT c_first, c_middle, c_last, c_street_1, c_street_2, c_city, c_state, c_zip,
       c_phone, c_since, c_credit, c_credit_lim, c_discount, c_balance,
       (c_credit = 'BC')::int AS bad_credit
  FROM customer WHERE c_w_id = :c_w_id AND c_d_id = :c_d_id AND c_id = :c_id \gset
\if :bad_credit
-- bad credit: the payment's ids and amount go to the left of C_DATA
UPDATE customer SET c_balance = c_balance - :h_cents::numeric / 100,
                    c_ytd_payment = c_ytd_payment + :h_cents::numeric / 100,
                    c_payment_cnt = c_payment_cnt + 1,
                    c_data = left(concat_ws(' ', :c_id::int, :c_d_id::int, :c_w_id::int, :d_id::int,
                                            :w_id::int, :h_cents::numeric / 100) || ' ' || c_data, 500)
 WHERE c_w_id = :c_w_id AND c_d_id = :c_d_id AND c_id = :c_id;
\else
UPDATE customer SET c_balance = c_balance - :h_cents::numeric / 100,
                    c_ytd_payment = c_ytd_payment + :h_cents::numeric / 100,
                    c_payment_cnt = c_payment_cnt + 1
 WHERE c_w_id = :c_w_id AND c_d_id = :c_d_id AND c_id = :c_id;
\endif
INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data)
 VALUES (:c_id, :c_d_id, :c_w_id, :d_id, :w_id, now(), :h_cents::numeric / 100,
         :w_name::text || '    ' || :d_name::text);
COMMIT;
