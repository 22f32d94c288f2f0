-- Primary keys (clause 1.3) and the two secondary indexes TPC-C
-- implementations use: customers by last name (Payment, Order-Status) and
-- orders by customer (Order-Status).  Built after loading.
\set ON_ERROR_STOP on
ALTER TABLE warehouse  ADD PRIMARY KEY (w_id);
ALTER TABLE district   ADD PRIMARY KEY (d_w_id, d_id);
ALTER TABLE customer   ADD PRIMARY KEY (c_w_id, c_d_id, c_id);
ALTER TABLE new_order  ADD PRIMARY KEY (no_w_id, no_d_id, no_o_id);
ALTER TABLE orders     ADD PRIMARY KEY (o_w_id, o_d_id, o_id);
ALTER TABLE order_line ADD PRIMARY KEY (ol_w_id, ol_d_id, ol_o_id, ol_number);
ALTER TABLE item       ADD PRIMARY KEY (i_id);
ALTER TABLE stock      ADD PRIMARY KEY (s_w_id, s_i_id);
CREATE INDEX customer_name ON customer (c_w_id, c_d_id, c_last, c_first);
CREATE INDEX orders_customer ON orders (o_w_id, o_d_id, o_c_id, o_id);
-- Column groups (fpsketch tables only, issue 8): the columns New-Order and
-- Payment update get timestamps of their own, so that a transaction that
-- reads a row's other columns (New-Order's w_tax, d_tax, c_discount, s_data)
-- does not conflict with one that adds to w_ytd, d_ytd, c_balance, ...
-- psql -v no_column_groups=1 (the -client and -sp workloads' databases,
-- which run TPC-C as users write it) declares none.
\if :{?no_column_groups}
\else
DO $$
BEGIN
	IF to_regproc('fpsketch_set_column_group') IS NOT NULL AND
	   (SELECT a.amname FROM pg_class c JOIN pg_am a ON a.oid = c.relam
		 WHERE c.oid = 'warehouse'::regclass) = 'fpsketch' THEN
		PERFORM fpsketch_set_column_group('warehouse', 'ytd', ARRAY['w_ytd']);
		PERFORM fpsketch_set_column_group('district', 'next_o_id', ARRAY['d_next_o_id']);
		PERFORM fpsketch_set_column_group('district', 'ytd', ARRAY['d_ytd']);
		PERFORM fpsketch_set_column_group('customer', 'payment',
			ARRAY['c_balance', 'c_ytd_payment', 'c_payment_cnt', 'c_delivery_cnt', 'c_data']);
		PERFORM fpsketch_set_column_group('stock', 'quantity',
			ARRAY['s_quantity', 's_ytd', 's_order_cnt', 's_remote_cnt']);
	END IF;
END
$$;
\endif
VACUUM ANALYZE;
