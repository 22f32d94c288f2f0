-- TPC-C-like schema: the nine tables of TPC-C clause 1.3, without keys or
-- indexes (indexes.sql adds them after loading).  psql variable :am is the
-- table access method (heap or fpsketch).
--   psql -v am=fpsketch -f schema.sql
\set ON_ERROR_STOP on

DROP TABLE IF EXISTS warehouse, district, customer, history, new_order,
	orders, order_line, item, stock CASCADE;

CREATE TABLE warehouse (
	w_id		int NOT NULL,
	w_name		varchar(10),
	w_street_1	varchar(20),
	w_street_2	varchar(20),
	w_city		varchar(20),
	w_state		char(2),
	w_zip		char(9),
	w_tax		numeric(4, 4),
	w_ytd		numeric(12, 2)
) USING :am;

CREATE TABLE district (
	d_id		int NOT NULL,
	d_w_id		int NOT NULL,
	d_name		varchar(10),
	d_street_1	varchar(20),
	d_street_2	varchar(20),
	d_city		varchar(20),
	d_state		char(2),
	d_zip		char(9),
	d_tax		numeric(4, 4),
	d_ytd		numeric(12, 2),
	d_next_o_id int
) USING :am;

CREATE TABLE customer (
	c_id		int NOT NULL,
	c_d_id		int NOT NULL,
	c_w_id		int NOT NULL,
	c_first		varchar(16),
	c_middle	char(2),
	c_last		varchar(16),
	c_street_1	varchar(20),
	c_street_2	varchar(20),
	c_city		varchar(20),
	c_state		char(2),
	c_zip		char(9),
	c_phone		char(16),
	c_since		timestamp,
	c_credit	char(2),
	c_credit_lim numeric(12, 2),
	c_discount	numeric(4, 4),
	c_balance	numeric(12, 2),
	c_ytd_payment numeric(12, 2),
	c_payment_cnt int,
	c_delivery_cnt int,
	c_data		varchar(500)
) USING :am;

-- TPC-C's HISTORY has no primary key (fpsketch then keys its rows by TID)
CREATE TABLE history (
	h_c_id		int,
	h_c_d_id	int,
	h_c_w_id	int,
	h_d_id		int,
	h_w_id		int,
	h_date		timestamp,
	h_amount	numeric(6, 2),
	h_data		varchar(24)
) USING :am;

CREATE TABLE new_order (
	no_o_id		int NOT NULL,
	no_d_id		int NOT NULL,
	no_w_id		int NOT NULL
) USING :am;

CREATE TABLE orders (
	o_id		int NOT NULL,
	o_d_id		int NOT NULL,
	o_w_id		int NOT NULL,
	o_c_id		int,
	o_entry_d	timestamp,
	o_carrier_id int,
	o_ol_cnt	int,
	o_all_local int
) USING :am;

CREATE TABLE order_line (
	ol_o_id		int NOT NULL,
	ol_d_id		int NOT NULL,
	ol_w_id		int NOT NULL,
	ol_number	int NOT NULL,
	ol_i_id		int,
	ol_supply_w_id int,
	ol_delivery_d timestamp,
	ol_quantity int,
	ol_amount	numeric(6, 2),
	ol_dist_info char(24)
) USING :am;

CREATE TABLE item (
	i_id		int NOT NULL,
	i_im_id		int,
	i_name		varchar(24),
	i_price		numeric(5, 2),
	i_data		varchar(50)
) USING :am;

CREATE TABLE stock (
	s_i_id		int NOT NULL,
	s_w_id		int NOT NULL,
	s_quantity	int,
	s_dist_01	char(24),
	s_dist_02	char(24),
	s_dist_03	char(24),
	s_dist_04	char(24),
	s_dist_05	char(24),
	s_dist_06	char(24),
	s_dist_07	char(24),
	s_dist_08	char(24),
	s_dist_09	char(24),
	s_dist_10	char(24),
	s_ytd		int,
	s_order_cnt int,
	s_remote_cnt int,
	s_data		varchar(50)
) USING :am;

-- C_LAST from a number 0..999 (clause 4.3.2.3); used by the loader and by
-- Payment / Order-Status to look customers up by last name.
CREATE OR REPLACE FUNCTION tpcc_lastname(n int) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
	SELECT s[n / 100 + 1] || s[n / 10 % 10 + 1] || s[n % 10 + 1]
	FROM (SELECT ARRAY['BAR', 'OUGHT', 'ABLE', 'PRI', 'PRES',
					   'ESE', 'ANTI', 'CALLY', 'ATION', 'EING'] AS s) syl
$$;

-- Counts the New-Orders that roll back on purpose (clause 2.4.2.3): the
-- script takes a number just before its ROLLBACK, which does not undo it.
DROP SEQUENCE IF EXISTS tpcc_intended_rollbacks;
CREATE SEQUENCE tpcc_intended_rollbacks;
