-- TPC-C New-Order and Payment as PL/pgSQL functions, the way TPC-C kits
-- for PostgreSQL (HammerDB's neword/payment, DBT-2's stored functions)
-- drive it: the client makes one call per business transaction.  Loaded
-- into the -sp workloads' databases (tpcc_w<N>_nodecl) after indexes.sql;
-- no fpsketch declaration.  Plain SQL inside: rows the function reads and
-- then overwrites are updated in one statement (UPDATE ... RETURNING), so
-- nothing is read FOR UPDATE.
\set ON_ERROR_STOP on

-- Returns 1, or 0 when an item is not found (the unused item 100001 of 1%
-- of New-Orders, clause 2.4.2.3): the function has then done the work of
-- every earlier line and the caller rolls the transaction back.  Items are
-- processed in the order given (not sorted).
CREATE OR REPLACE FUNCTION tpcc_sp_new_order(p_w_id int, p_d_id int, p_c_id int, p_ol_cnt int,
											 p_i_ids int[], p_supply_w_ids int[], p_qtys int[])
RETURNS int LANGUAGE plpgsql AS $$
DECLARE
	v_w_tax		numeric;
	v_d_tax		numeric;
	v_o_id		int;
	v_c_discount numeric;
	v_c_last	text;
	v_c_credit	text;
	v_all_local int := 1;
	v_i_price	numeric;
	v_i_name	text;
	v_i_data	text;
	v_s_data	text;
	v_s_dist	text;
	v_total		numeric := 0;
	n			int;
BEGIN
	FOR n IN 1 .. p_ol_cnt LOOP
		IF p_supply_w_ids[n] <> p_w_id THEN
			v_all_local := 0;
		END IF;
	END LOOP;

	SELECT c_discount, c_last, c_credit, w_tax
	  INTO v_c_discount, v_c_last, v_c_credit, v_w_tax
	  FROM customer JOIN warehouse ON w_id = c_w_id
	 WHERE c_w_id = p_w_id AND c_d_id = p_d_id AND c_id = p_c_id;

	UPDATE district SET d_next_o_id = d_next_o_id + 1
	 WHERE d_w_id = p_w_id AND d_id = p_d_id
	RETURNING d_next_o_id - 1, d_tax INTO v_o_id, v_d_tax;

	INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_ol_cnt, o_all_local)
	VALUES (v_o_id, p_d_id, p_w_id, p_c_id, now(), p_ol_cnt, v_all_local);
	INSERT INTO new_order (no_o_id, no_d_id, no_w_id) VALUES (v_o_id, p_d_id, p_w_id);

	FOR n IN 1 .. p_ol_cnt LOOP
		SELECT i_price, i_name, i_data INTO v_i_price, v_i_name, v_i_data
		  FROM item WHERE i_id = p_i_ids[n];
		IF NOT FOUND THEN
			RETURN 0;
		END IF;

		UPDATE stock
		   SET s_quantity = CASE WHEN s_quantity >= p_qtys[n] + 10 THEN s_quantity - p_qtys[n]
								 ELSE s_quantity - p_qtys[n] + 91 END,
			   s_ytd = s_ytd + p_qtys[n],
			   s_order_cnt = s_order_cnt + 1,
			   s_remote_cnt = s_remote_cnt + (p_supply_w_ids[n] <> p_w_id)::int
		 WHERE s_i_id = p_i_ids[n] AND s_w_id = p_supply_w_ids[n]
		RETURNING s_data,
				  CASE p_d_id WHEN 1 THEN s_dist_01 WHEN 2 THEN s_dist_02 WHEN 3 THEN s_dist_03
							  WHEN 4 THEN s_dist_04 WHEN 5 THEN s_dist_05 WHEN 6 THEN s_dist_06
							  WHEN 7 THEN s_dist_07 WHEN 8 THEN s_dist_08 WHEN 9 THEN s_dist_09
							  ELSE s_dist_10 END
			 INTO v_s_data, v_s_dist;

		INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id,
								ol_delivery_d, ol_quantity, ol_amount, ol_dist_info)
		VALUES (v_o_id, p_d_id, p_w_id, n, p_i_ids[n], p_supply_w_ids[n], NULL, p_qtys[n],
				p_qtys[n] * v_i_price, v_s_dist);
		v_total := v_total + p_qtys[n] * v_i_price;
	END LOOP;
	-- the total the terminal would display
	v_total := v_total * (1 - v_c_discount) * (1 + v_w_tax + v_d_tax);
	RETURN 1;
END
$$;

-- Payment (clause 2.5): p_by_name = 1 selects the customer by last name
-- (tpcc_lastname(p_c_last_n), the one at position ceil(n/2) by c_first).
CREATE OR REPLACE FUNCTION tpcc_sp_payment(p_w_id int, p_d_id int, p_c_w_id int, p_c_d_id int,
										   p_c_id int, p_by_name int, p_c_last_n int, p_h_cents int)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
	v_amount	numeric := p_h_cents / 100.0;
	v_w_name	text;
	v_d_name	text;
	v_c_id		int := p_c_id;
	v_c_credit	text;
	v_cnt		int;
BEGIN
	UPDATE warehouse SET w_ytd = w_ytd + v_amount WHERE w_id = p_w_id
	RETURNING w_name INTO v_w_name;
	UPDATE district SET d_ytd = d_ytd + v_amount WHERE d_w_id = p_w_id AND d_id = p_d_id
	RETURNING d_name INTO v_d_name;

	IF p_by_name = 1 THEN
		SELECT count(*) INTO v_cnt FROM customer
		 WHERE c_w_id = p_c_w_id AND c_d_id = p_c_d_id AND c_last = tpcc_lastname(p_c_last_n);
		SELECT c_id INTO v_c_id FROM customer
		 WHERE c_w_id = p_c_w_id AND c_d_id = p_c_d_id AND c_last = tpcc_lastname(p_c_last_n)
		 ORDER BY c_first OFFSET (v_cnt - 1) / 2 LIMIT 1;
	END IF;

	UPDATE customer
	   SET c_balance = c_balance - v_amount,
		   c_ytd_payment = c_ytd_payment + v_amount,
		   c_payment_cnt = c_payment_cnt + 1,
		   c_data = CASE WHEN c_credit = 'BC'
						 THEN left(concat_ws(' ', v_c_id, p_c_d_id, p_c_w_id, p_d_id, p_w_id, v_amount)
								   || ' ' || c_data, 500)
						 ELSE c_data END
	 WHERE c_w_id = p_c_w_id AND c_d_id = p_c_d_id AND c_id = v_c_id
	RETURNING c_credit INTO v_c_credit;

	INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, h_data)
	VALUES (v_c_id, p_c_d_id, p_c_w_id, p_d_id, p_w_id, now(), v_amount,
			v_w_name || '    ' || v_d_name);
END
$$;
